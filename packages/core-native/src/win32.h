// <windows.h> without the macros that break standard C++ (min/max) and without the rarely used parts.
// Include this instead of <windows.h> directly.
#pragma once
#if defined(_WIN32)
#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#ifndef NOMINMAX
#define NOMINMAX
#endif
#include <windows.h>
#endif
