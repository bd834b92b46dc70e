/* A stand-in libroctx64.so: records the ranges pushed and popped, for tests/roctx_standin.rs. */
#include <pthread.h>
#include <string.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static char log_buf[1 << 16];
static size_t log_len;
static int depth, max_depth, pops;

int roctxRangePushA(const char *message) {
    pthread_mutex_lock(&mu);
    size_t n = strlen(message);
    if (log_len + n + 2 < sizeof log_buf) {
        memcpy(log_buf + log_len, message, n);
        log_len += n;
        log_buf[log_len++] = '\n';
        log_buf[log_len] = 0;
    }
    depth++;
    if (depth > max_depth) max_depth = depth;
    pthread_mutex_unlock(&mu);
    return depth - 1;
}

int roctxRangePop(void) {
    pthread_mutex_lock(&mu);
    depth--;
    pops++;
    pthread_mutex_unlock(&mu);
    return depth;
}

/* The names pushed so far, one a line. */
const char *standin_roctx_log(void) { return log_buf; }

/* Ranges still open, the deepest nesting seen, and pops so far. */
void standin_roctx_depths(int *out) {
    pthread_mutex_lock(&mu);
    out[0] = depth;
    out[1] = max_depth;
    out[2] = pops;
    pthread_mutex_unlock(&mu);
}
