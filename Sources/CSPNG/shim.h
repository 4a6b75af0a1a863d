#ifndef GLIMPSE_CSPNG_SHIM_H
#define GLIMPSE_CSPNG_SHIM_H
#include <stddef.h>
#include <spng.h>
#endif
