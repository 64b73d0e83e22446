/* Copyright 2026 UniLab contributors
 * SPDX-License-Identifier: Apache-2.0
 *
 * The user header of a UniLab tensor sample on the iceoryx2 backend, for readers in C and
 * C++ (a controller that takes the policy's action without Python). Same layout as
 * unilab_core/transport/iox_layout.py (TensorHeader, TensorEntry, Ack); a test compiles
 * this header and checks every size and offset against the Python definition.
 *
 * The service of a topic is "unilab/d<ROS domain>/<topic without leading slash>": payload
 * a dynamic slice of u8 (type name "u8", 64-byte payload alignment), user header type name
 * "unilab_tensor_header". Tensors lie at header.tensors[i].offset in the payload, C order.
 */
#ifndef UNILAB_TENSOR_HEADER_H
#define UNILAB_TENSOR_HEADER_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define UNILAB_TENSOR_MAGIC 0x54424C55u /* "ULBT" little-endian */
#define UNILAB_TENSOR_HEADER_VERSION 1u
#define UNILAB_MAX_TENSORS 32
#define UNILAB_MAX_DIMS 6
#define UNILAB_NAME_BYTES 40
#define UNILAB_KIND_BYTES 32
#define UNILAB_PAYLOAD_ALIGN 64
#define UNILAB_HEADER_TYPE_NAME "unilab_tensor_header"

/* dtype codes: the order of unilab_core.transport.descriptor.DTYPES */
enum unilab_dtype {
    UNILAB_FLOAT32 = 0, UNILAB_FLOAT64, UNILAB_FLOAT16, UNILAB_INT8, UNILAB_INT16,
    UNILAB_INT32, UNILAB_INT64, UNILAB_UINT8, UNILAB_UINT16, UNILAB_UINT32, UNILAB_UINT64,
    UNILAB_BOOL
};

typedef struct {
    char name[UNILAB_NAME_BYTES]; /* NUL-terminated */
    uint8_t dtype;                /* enum unilab_dtype */
    uint8_t ndim;
    uint8_t pad_[6];
    uint64_t offset;              /* bytes from the start of the payload */
    uint64_t shape[UNILAB_MAX_DIMS];
} unilab_tensor_entry;

typedef struct {
    uint32_t magic;               /* UNILAB_TENSOR_MAGIC */
    uint32_t version;             /* UNILAB_TENSOR_HEADER_VERSION */
    uint64_t index;               /* message index of the writer (0, 1, 2, ...) */
    uint64_t seq;                 /* control step */
    uint64_t msg_version;         /* weight version */
    uint64_t stamp_ns;
    uint64_t publish_ns;          /* CLOCK_MONOTONIC at send */
    uint64_t payload_bytes;
    uint32_t n_tensors;
    uint32_t pad_;
    char kind[UNILAB_KIND_BYTES]; /* NUL-terminated */
    unilab_tensor_entry tensors[UNILAB_MAX_TENSORS];
} unilab_tensor_header;

/* Return the entry named `name`, or NULL (also for a header that is not ours). */
static inline const unilab_tensor_entry *unilab_tensor_find(const unilab_tensor_header *h,
                                                            const char *name)
{
    if (h->magic != UNILAB_TENSOR_MAGIC || h->version != UNILAB_TENSOR_HEADER_VERSION)
        return NULL;
    for (uint32_t i = 0; i < h->n_tensors && i < UNILAB_MAX_TENSORS; ++i)
        if (strncmp(h->tensors[i].name, name, UNILAB_NAME_BYTES) == 0)
            return &h->tensors[i];
    return NULL;
}

/* Number of elements of a tensor. */
static inline uint64_t unilab_tensor_numel(const unilab_tensor_entry *e)
{
    uint64_t n = 1;
    for (uint8_t d = 0; d < e->ndim && d < UNILAB_MAX_DIMS; ++d)
        n *= e->shape[d];
    return n;
}

#endif /* UNILAB_TENSOR_HEADER_H */
