/* _vfgx.h - what the Python package's C files share: the Session
 * (_session.c), the Chunk (_vfgx.c), the checks every use makes, and the
 * Recorder (_record.c) the session's recorder() method returns. */
#ifndef VFGX_PY_H
#define VFGX_PY_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <vfgx/vfgx.h>

/* A Session (_session.c): a vfgx_session; Pipeline in Python is one too. */
typedef struct {
	PyObject_HEAD
	vfgx_ctx *ctx;
	struct vfgx_config *cfg;  /* the session's, kept here */
	vfgx_session *s;
	vfgx_pipeline *pl;        /* the session's */
	int started, stopped;
	unsigned long generation; /* fork_generation when made */
	long owner_pid;           /* its process, for the message */
	char kind[16];            /* "Session" or "Pipeline", for messages */
	char *owned[5];           /* keyword strings the session points to */
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

extern PyTypeObject SessionType, ChunkType, RecorderType;
extern PyObject *ConfigError;

/* pthread_atfork's child handler: objects made before are inherited */
void after_fork_in_child(void);

/* made in another process (inherited through fork()): refuse every use */
int inherited(const PipelineObject *p);
/* one RuntimeError for such a use; -1 */
int refuse_inherited(const PipelineObject *p);
/* 0, or -1 with the exception set: closed, or inherited */
int need_pipeline(PipelineObject *p);
/* need_pipeline, and the program takes the chunks (the config has
 * chunks and no user code or recorder of the session takes them) */
int need_own_chunks(PipelineObject *p, const char *what);
/* 0, or -1 with the exception set: given back, or inherited */
int chunk_live(ChunkObject *ch);
/* Pipeline.recorder(path, format, ...) -> Recorder (_record.c) */
PyObject *pipeline_recorder(PipelineObject *p, PyObject *args, PyObject *kw);

#endif
