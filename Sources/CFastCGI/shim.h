#ifndef CFASTCGI_SHIM_H
#define CFASTCGI_SHIM_H
// libfcgi's multi-threaded API (FCGX_*). FCGX_FPrintF is variadic and does not import;
// the wrapper writes with FCGX_PutStr instead, so no shim is needed.
#include <fcgiapp.h>
#endif
