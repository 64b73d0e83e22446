/* Copyright 2026 UniLab contributors
 * SPDX-License-Identifier: Apache-2.0
 *
 * A full memory barrier for the shared-memory ring (unilab_core/transport/ring_layout.py,
 * fence()): C11 atomic_thread_fence(memory_order_seq_cst), which compilers emit as MFENCE
 * (or a locked instruction) on x86-64 and DMB ISH on AArch64. It replaces a fence that
 * relied on how CPython implements threading.Lock, which a free-threaded build or another
 * lock implementation would silently break. A top-level module, so that a package source
 * directory on sys.path (the tests run there) never shadows it.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdatomic.h>

static PyObject *fence(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    atomic_thread_fence(memory_order_seq_cst);
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"fence", fence, METH_NOARGS,
     "Issue a sequentially consistent full memory barrier (C11 atomic_thread_fence)."},
    {NULL, NULL, 0, NULL},
};

static PyModuleDef_Slot slots[] = {
#ifdef Py_mod_gil
    {Py_mod_gil, Py_MOD_GIL_NOT_USED},
#endif
    {0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "unilab_fence",
    "A real memory fence for UniLab's shared-memory ring.", 0, methods, slots,
    NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit_unilab_fence(void)
{
    return PyModuleDef_Init(&module);
}
