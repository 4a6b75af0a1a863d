#ifndef GLIMPSE_CTURBOJPEG_SHIM_H
#define GLIMPSE_CTURBOJPEG_SHIM_H
#include <stddef.h>
#include <turbojpeg.h>
#endif
