#ifndef GLIMPSE_CNGHTTP2_SHIM_H
#define GLIMPSE_CNGHTTP2_SHIM_H
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <nghttp2/nghttp2.h>
#endif
