/* Copyright 2026 UniLab contributors
 * SPDX-License-Identifier: Apache-2.0
 *
 * Layout check of unilab_tensor_header.h against the Python definition (test_c_reader.py):
 * prints the sizes and offsets as JSON, then reads one header + payload (as the Python
 * writer lays them out in a sample) from a file and checks the values of tensor `x`
 * (float32, x[i] == seq + i). Exit status 0 when every value matches.
 */
#include <stdio.h>
#include <stdlib.h>

#include "unilab_tensor_header.h"

int main(int argc, char **argv)
{
    printf("{\"header\": %zu, \"entry\": %zu, \"index\": %zu, \"n_tensors\": %zu, "
           "\"kind\": %zu, \"tensors\": %zu, \"entry_offset\": %zu, \"entry_shape\": %zu}\n",
           sizeof(unilab_tensor_header), sizeof(unilab_tensor_entry),
           offsetof(unilab_tensor_header, index), offsetof(unilab_tensor_header, n_tensors),
           offsetof(unilab_tensor_header, kind), offsetof(unilab_tensor_header, tensors),
           offsetof(unilab_tensor_entry, offset), offsetof(unilab_tensor_entry, shape));
    if (argc < 2)
        return 0;
    FILE *f = fopen(argv[1], "rb");
    if (!f)
        return 2;
    static unilab_tensor_header h;
    if (fread(&h, sizeof h, 1, f) != 1)
        return 2;
    static unsigned char payload[1 << 16] __attribute__((aligned(UNILAB_PAYLOAD_ALIGN)));
    size_t n = fread(payload, 1, sizeof payload, f);
    fclose(f);
    const unilab_tensor_entry *x = unilab_tensor_find(&h, "x");
    if (!x || x->dtype != UNILAB_FLOAT32 || x->offset + 4 * unilab_tensor_numel(x) > n) {
        printf("bad header or no float32 tensor `x`\n");
        return 1;
    }
    const float *v = (const float *)(payload + x->offset);
    for (uint64_t i = 0; i < unilab_tensor_numel(x); ++i) {
        if (v[i] != (float)(h.seq + i)) {
            printf("x[%llu] = %f, expected %llu\n", (unsigned long long)i, v[i],
                   (unsigned long long)(h.seq + i));
            return 1;
        }
    }
    printf("ok kind=%s seq=%llu n=%llu\n", h.kind, (unsigned long long)h.seq,
           (unsigned long long)unilab_tensor_numel(x));
    return 0;
}
