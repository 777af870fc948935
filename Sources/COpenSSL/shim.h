#ifndef COPENSSL_SHIM_H
#define COPENSSL_SHIM_H
// Hide every API deprecated in OpenSSL 3 (RSA_*, EC_KEY_*), so Swift can only reach EVP.
#define OPENSSL_API_COMPAT 30000
#define OPENSSL_NO_DEPRECATED
#include <openssl/evp.h>
#include <openssl/err.h>
#include <openssl/rand.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/param_build.h>
#include <openssl/pem.h>
#include <openssl/bio.h>
#include <openssl/ecdsa.h>
#include <openssl/ec.h>
#include <openssl/rsa.h>
#include <openssl/crypto.h>

// OPENSSL_free is a function-like macro (it passes __FILE__/__LINE__), which Swift cannot import.
static inline void COpenSSL_free(void *p) { OPENSSL_free(p); }

// BIO_get_mem_data is a function-like macro over BIO_ctrl.
static inline long COpenSSL_BIO_get_mem_data(BIO *b, char **pp) { return BIO_get_mem_data(b, pp); }

// EVP_PKEY_PUBLIC_KEY is a macro built from other macros ("structure not supported").
static inline int COpenSSL_EVP_PKEY_PUBLIC_KEY(void) { return EVP_PKEY_PUBLIC_KEY; }

// EVP_PKEY_KEYPAIR is built the same way.
static inline int COpenSSL_EVP_PKEY_KEYPAIR(void) { return EVP_PKEY_KEYPAIR; }
#endif
