/* gpu_resident.c - cudaFree, cudaFreeHost and cudaHostUnregister
 * synchronize the whole device, so while a persistent kernel is resident
 * they wait for it to end: on an H200, deleting a second pipeline's GPU
 * memory while a `device: gpu` pipeline ran never returned.  Releases made
 * while any persistent kernel of this process is resident are queued here
 * and done when the last one has ended (or at exit, by the process). */
#include <pthread.h>
#include <stdlib.h>
#include <sys/mman.h>

#include <cuda_runtime_api.h>

#include "gpu_resident.h"

struct pending {
	enum vfgx_gpu_release how;
	void *p;
	size_t len;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int resident;
static struct pending *queue;
static size_t queued, queue_cap;

static void release_now(const struct pending *r)
{
	switch (r->how) {
	case VFGX_GPU_FREE_DEVICE:
		cudaFree(r->p);
		break;
	case VFGX_GPU_FREE_HOST:
		cudaFreeHost(r->p);
		break;
	case VFGX_GPU_UNREGISTER:
		cudaHostUnregister(r->p);
		if (r->len)
			munmap(r->p, r->len);
		break;
	}
}

static bool grow(void)
{
	size_t cap = queue_cap ? 2 * queue_cap : 16;
	struct pending *nq = realloc(queue, cap * sizeof(*nq));

	if (!nq)
		return false;
	queue = nq;
	queue_cap = cap;
	return true;
}

/* Every release runs under the lock, so a kernel cannot become resident
 * (gpuk_start adds before it launches) while one is in progress. */
void vfgx_gpu_resident_add(int delta)
{
	pthread_mutex_lock(&lock);
	resident += delta;
	if (resident <= 0) {
		resident = 0;
		for (size_t i = 0; i < queued; i++)
			release_now(&queue[i]);
		free(queue);
		queue = NULL;
		queued = queue_cap = 0;
	}
	pthread_mutex_unlock(&lock);
}

bool vfgx_gpu_resident(void)
{
	pthread_mutex_lock(&lock);
	bool r = resident > 0;
	pthread_mutex_unlock(&lock);
	return r;
}

void vfgx_gpu_release(enum vfgx_gpu_release how, void *p, size_t unmap_len)
{
	struct pending r = { how, p, unmap_len };

	if (!p)
		return;
	pthread_mutex_lock(&lock);
	if (resident == 0) {
		release_now(&r);
	} else if (queued < queue_cap || grow()) {
		queue[queued++] = r;
	}
	/* else: kept (never freed) rather than block on the kernel */
	pthread_mutex_unlock(&lock);
}
