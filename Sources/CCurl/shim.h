#ifndef CCURL_SHIM_H
#define CCURL_SHIM_H
// libcurl's easy interface. curl_easy_setopt is variadic: typed shims are added with the HTTP client.
#include <curl/curl.h>
#endif
