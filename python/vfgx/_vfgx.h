/* _vfgx.h - what the Python package's C files share: the Pipeline and
 * Chunk objects (_vfgx.c), the checks every use makes, and the Recorder
 * (_record.c) the Pipeline's recorder() method returns. */
#ifndef VFGX_PY_H
#define VFGX_PY_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <vfgx/vfgx.h>

typedef struct {
	PyObject_HEAD
	vfgx_ctx *ctx;
	struct vfgx_config *cfg;
	vfgx_port *ports[VFGX_MAX_IFACES];
	uint16_t nb_ports;
	vfgx_pipeline *pl;
	int started, stopped;
	unsigned long generation; /* fork_generation when made */
	long owner_pid;           /* its process, for the message */
} PipelineObject;

typedef struct {
	PyObject_HEAD
	PipelineObject *pipe; /* a reference */
	struct vfgx_chunk *c; /* NULL once given back */
	uint32_t stream;      /* which chunk c is, taken at get: the put */
	uint64_t index;       /* names it, never only its ring slot */
	Py_ssize_t exports;   /* buffer views and DLPack tensors alive */
	Py_ssize_t shape[2];
} ChunkObject;

extern PyTypeObject ChunkType, RecorderType;

/* made in another process (inherited through fork()): refuse every use */
int inherited(const PipelineObject *p);
/* one RuntimeError for such a use; -1 */
int refuse_inherited(const PipelineObject *p);
/* 0, or -1 with the exception set: closed, or inherited */
int need_pipeline(PipelineObject *p);
/* 0, or -1 with the exception set: given back, or inherited */
int chunk_live(ChunkObject *ch);
/* Pipeline.recorder(path, format, ...) -> Recorder (_record.c) */
PyObject *pipeline_recorder(PipelineObject *p, PyObject *args, PyObject *kw);

#endif
