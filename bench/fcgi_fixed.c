/*
 * The transport reference for scripts/bench: a minimal multi-threaded libfcgi responder that
 * drains the request body and answers the same bytes as siwa's healthy GET /health, without
 * touching a database. It measures what nginx + FastCGI + this machine can do at most.
 *
 *   cc -O2 -o bench/fcgi_fixed bench/fcgi_fixed.c -lfcgi -lpthread
 *   bench/fcgi_fixed SOCKET_PATH THREADS
 */
#include <fcgiapp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char reply[] =
    "Status: 200 OK\r\nContent-Type: application/json\r\nContent-Length: 31\r\n"
    "Cache-Control: no-store\r\n\r\n{\"database\":\"ok\",\"status\":\"ok\"}";
static int listen_socket;

static void *worker(void *unused) {
    (void)unused;
    FCGX_Request request;
    char body[16384];
    FCGX_InitRequest(&request, listen_socket, 0);
    while (FCGX_Accept_r(&request) >= 0) {
        while (FCGX_GetStr(body, sizeof body, request.in) > 0) {}
        FCGX_PutStr(reply, sizeof reply - 1, request.out);
        FCGX_Finish_r(&request);
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s SOCKET_PATH THREADS\n", argv[0]);
        return 2;
    }
    int count = atoi(argv[2]);
    if (count < 1 || count > 1024) return 2;
    FCGX_Init();
    unlink(argv[1]);
    listen_socket = FCGX_OpenSocket(argv[1], 1024);
    if (listen_socket < 0 || chmod(argv[1], 0660) != 0) {
        perror("FCGX_OpenSocket");
        return 1;
    }
    pthread_t *threads = calloc((size_t)count, sizeof *threads);
    for (int i = 0; i < count; i++) pthread_create(&threads[i], NULL, worker, NULL);
    for (int i = 0; i < count; i++) pthread_join(threads[i], NULL);
    return 0;
}
