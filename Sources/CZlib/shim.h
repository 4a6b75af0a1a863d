#ifndef GLIMPSE_CZLIB_SHIM_H
#define GLIMPSE_CZLIB_SHIM_H
#include <zlib.h>

/// inflateInit2 is a macro; window bits 15 + 32 accept both gzip and zlib headers.
static inline int glimpse_inflate_init_auto(z_streamp stream) {
    return inflateInit2(stream, 15 + 32);
}

/// inflateInit is a macro: a zlib stream (the format of PNG image data).
static inline int glimpse_inflate_init_zlib(z_streamp stream) {
    return inflateInit(stream);
}
#endif
