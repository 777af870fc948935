/* The OpenSSL 3 EVP floor for RS256 verification on one thread: a 2048-bit key built from n and e
 * with EVP_PKEY_fromdata (as keys from a JWKS are), a context initialised once with
 * EVP_DigestVerifyInit_ex and copied per verification, over a 700-byte signing input.
 * Prints verifications per second. Usage: evp_verify SECONDS */
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <openssl/rsa.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    double seconds = argc > 1 ? atof(argv[1]) : 3;
    EVP_PKEY *pair = EVP_RSA_gen(2048);
    BIGNUM *n = NULL, *e = NULL;
    EVP_PKEY_get_bn_param(pair, OSSL_PKEY_PARAM_RSA_N, &n);
    EVP_PKEY_get_bn_param(pair, OSSL_PKEY_PARAM_RSA_E, &e);
    OSSL_PARAM_BLD *builder = OSSL_PARAM_BLD_new();
    OSSL_PARAM_BLD_push_BN(builder, OSSL_PKEY_PARAM_RSA_N, n);
    OSSL_PARAM_BLD_push_BN(builder, OSSL_PKEY_PARAM_RSA_E, e);
    OSSL_PARAM *params = OSSL_PARAM_BLD_to_param(builder);
    EVP_PKEY_CTX *keys = EVP_PKEY_CTX_new_from_name(NULL, "RSA", NULL);
    EVP_PKEY *key = NULL;
    if (EVP_PKEY_fromdata_init(keys) != 1 || EVP_PKEY_fromdata(keys, &key, EVP_PKEY_PUBLIC_KEY, params) != 1) return 1;

    unsigned char message[700], signature[256];
    size_t length = sizeof signature;
    memset(message, 'a', sizeof message);
    EVP_MD_CTX *signer = EVP_MD_CTX_new();
    if (EVP_DigestSignInit_ex(signer, NULL, "SHA256", NULL, NULL, pair, NULL) != 1 ||
        EVP_DigestSign(signer, signature, &length, message, sizeof message) != 1) return 1;

    EVP_MD_CTX *template = EVP_MD_CTX_new(), *work = EVP_MD_CTX_new();
    if (EVP_DigestVerifyInit_ex(template, NULL, "SHA256", NULL, NULL, key, NULL) != 1) return 1;
    long count = 0;
    double start = now();
    while (now() - start < seconds) {
        for (int i = 0; i < 100; i++) {
            EVP_MD_CTX_copy_ex(work, template);
            count += EVP_DigestVerify(work, signature, length, message, sizeof message) == 1;
        }
    }
    printf("%.0f\n", count / (now() - start));
    return 0;
}
