#ifndef CMARIADB_SHIM_H
#define CMARIADB_SHIM_H
// stddef.h first: the clang module does not get NULL from mysql.h.
#include <stddef.h>
#include <mysql.h>
#include <errmsg.h>
#include <mysqld_error.h>

// mysql_library_init is a #define alias of mysql_server_init, which Swift does not see.
// Call it once in main before any thread connects (it is not thread-safe).
static inline int CMariaDB_library_init(void) { return mysql_server_init(0, NULL, NULL); }
#endif
