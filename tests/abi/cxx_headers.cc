// cxx_headers.cc - every public header compiles as C++ (a CUDA or C++
// consumer of chunks includes them), and the per-chunk kernel's argument
// struct has the layout the C side fills.
#include <vfgx/vfgx.h>
#include <vfgx/user.h>

#include <cstddef>

static_assert(offsetof(struct vfgx_chunk_kargs, data) == 32, "kargs layout");
static_assert(sizeof(struct vfgx_chunk_kargs) == 72, "kargs size");

int main()
{
	struct vfgx_chunk_config c;

	vfgx_chunk_config_default(&c);
	return c.argsz == sizeof(c) ? 0 : 1;
}
