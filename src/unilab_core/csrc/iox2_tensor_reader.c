/* Copyright 2026 UniLab contributors
 * SPDX-License-Identifier: Apache-2.0
 *
 * A reader of a UniLab tensor topic in C, through iceoryx2's C bindings (no Python):
 *
 *     iox2_tensor_reader SERVICE COUNT
 *
 * subscribes to SERVICE ("unilab/d<domain>/<topic>", see unilab_tensor_header.h), takes
 * COUNT samples, and checks in each that tensor `x` (float32) holds x[i] == seq + i. Prints
 * "ready" once subscribed and "ok <count>" at the end; exit status 1 on a wrong value.
 * Built by test_c_reader.py where the iceoryx2 C bindings are installed.
 */
#include <stdalign.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "iox2/iceoryx2.h"
#include "unilab_tensor_header.h"

static int check(const unilab_tensor_header *h, const unsigned char *payload, size_t bytes)
{
    const unilab_tensor_entry *x = unilab_tensor_find(h, "x");
    if (!x || x->dtype != UNILAB_FLOAT32 || x->offset + 4 * unilab_tensor_numel(x) > bytes)
        return 0;
    const float *v = (const float *)(payload + x->offset);
    for (uint64_t i = 0; i < unilab_tensor_numel(x); ++i)
        if (v[i] != (float)(h->seq + i))
            return 0;
    return 1;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s SERVICE COUNT\n", argv[0]);
        return 2;
    }
    const char *service = argv[1];
    long want = strtol(argv[2], NULL, 10);
    int rc = 2;
    iox2_node_builder_h nb = iox2_node_builder_new(NULL);
    iox2_node_h node = NULL;
    if (iox2_node_builder_create(nb, NULL, iox2_service_type_e_IPC, &node) != IOX2_OK)
        return 2;
    iox2_service_name_h name = NULL;
    if (iox2_service_name_new(NULL, service, strlen(service), &name) != IOX2_OK)
        goto drop_node;
    iox2_service_builder_h sb =
        iox2_node_service_builder(&node, NULL, iox2_cast_service_name_ptr(name));
    iox2_service_builder_pub_sub_h ps = iox2_service_builder_pub_sub(sb);
    /* the Python writer: a dynamic slice of u8, 64-byte aligned, our header type */
    if (iox2_service_builder_pub_sub_set_payload_type_details(
            &ps, iox2_type_variant_e_DYNAMIC, "u8", 2, 1, 1) != IOX2_OK)
        goto drop_name;
    iox2_service_builder_pub_sub_set_payload_alignment(&ps, UNILAB_PAYLOAD_ALIGN);
    if (iox2_service_builder_pub_sub_set_user_header_type_details(
            &ps, iox2_type_variant_e_FIXED_SIZE, UNILAB_HEADER_TYPE_NAME,
            strlen(UNILAB_HEADER_TYPE_NAME), sizeof(unilab_tensor_header),
            alignof(unilab_tensor_header)) != IOX2_OK)
        goto drop_name;
    iox2_port_factory_pub_sub_h svc = NULL;
    if (iox2_service_builder_pub_sub_open(ps, NULL, &svc) != IOX2_OK) {
        fprintf(stderr, "cannot open service %s\n", service);
        goto drop_name;
    }
    iox2_port_factory_subscriber_builder_h subb =
        iox2_port_factory_pub_sub_subscriber_builder(&svc, NULL);
    iox2_subscriber_h sub = NULL;
    if (iox2_port_factory_subscriber_builder_create(subb, NULL, &sub) != IOX2_OK)
        goto drop_service;
    printf("ready\n");
    fflush(stdout);
    long got = 0;
    rc = 0;
    while (got < want && iox2_node_wait(&node, 0, 1000000) == IOX2_OK) {
        iox2_sample_h sample = NULL;
        while (got < want && iox2_subscriber_receive(&sub, NULL, &sample) == IOX2_OK &&
               sample != NULL) {
            const unilab_tensor_header *h = NULL;
            const void *payload = NULL;
            size_t bytes = 0;
            iox2_sample_user_header(&sample, (const void **)&h);
            iox2_sample_payload(&sample, &payload, &bytes);
            if (!check(h, (const unsigned char *)payload, bytes)) {
                printf("wrong values in message seq %llu\n", (unsigned long long)h->seq);
                rc = 1;
            }
            ++got;
            iox2_sample_drop(sample);
            sample = NULL;
        }
    }
    if (rc == 0)
        printf("ok %ld\n", got);
    iox2_subscriber_drop(sub);
drop_service:
    iox2_port_factory_pub_sub_drop(svc);
drop_name:
    iox2_service_name_drop(name);
drop_node:
    iox2_node_drop(node);
    return rc;
}
