/* The OpenSSL 3 EVP floor for RS256 verification on one thread: a 2048-bit key built from n and e
 * with EVP_PKEY_fromdata (as keys from a JWKS are), the 700-byte signing input hashed with
 * EVP_Digest and the digest verified with EVP_PKEY_verify on a context initialised once and reused,
 * which is what the JOSE module does.
 * Prints verifications per second of wall time, then the thread's CPU time per verification in µs
 * (steadier than wall time on a machine shared with other work). Usage: evp_verify SECONDS */
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <openssl/rsa.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double clock_seconds(clockid_t clock) {
    struct timespec t;
    clock_gettime(clock, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static double now(void) { return clock_seconds(CLOCK_MONOTONIC); }

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

    EVP_MD *sha256 = EVP_MD_fetch(NULL, "SHA256", NULL);
    EVP_PKEY_CTX *verifier = EVP_PKEY_CTX_new_from_pkey(NULL, key, NULL);
    if (EVP_PKEY_verify_init(verifier) != 1 || EVP_PKEY_CTX_set_signature_md(verifier, sha256) != 1 ||
        EVP_PKEY_CTX_set_rsa_padding(verifier, RSA_PKCS1_PADDING) != 1) return 1;
    unsigned char digest[32];
    unsigned int digestLength = 0;
    long count = 0;
    double start = now();
    double cpuStart = clock_seconds(CLOCK_THREAD_CPUTIME_ID);
    while (now() - start < seconds) {
        for (int i = 0; i < 100; i++) {
            EVP_Digest(message, sizeof message, digest, &digestLength, sha256, NULL);
            count += EVP_PKEY_verify(verifier, signature, length, digest, digestLength) == 1;
        }
    }
    double wall = now() - start, cpu = clock_seconds(CLOCK_THREAD_CPUTIME_ID) - cpuStart;
    printf("%.0f %.2f\n", count / wall, cpu * 1e6 / count);
    return 0;
}
