// LD_PRELOAD shim for running Swift executables under valgrind 3.19 (tools/bench-serving/profile.sh).
//
// An async `main` parks the main thread in libdispatch's `_dispatch_sig_thread`, which calls
// `sigsuspend` with a mask in read-only memory (`_dispatch_sigsuspend.mask`, .rodata). Valgrind 3.19
// rewrites the mask it is given in place and dies with SIGSEGV ("the 'impossible' happened"). Passing
// a copy on the stack changes nothing for the program.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>

int sigsuspend(const sigset_t *mask) {
    static int (*real)(const sigset_t *);
    sigset_t copy = *mask;
    if (!real) real = (int (*)(const sigset_t *))dlsym(RTLD_NEXT, "sigsuspend");
    return real(&copy);
}
