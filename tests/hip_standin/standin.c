/* A stand-in for the HIP runtime (libamdhip64), for conformance tests without a GPU.
 *
 * It exports the HIP functions brickprof's HIP timeline calls, with one in-order stream run by
 * an asynchronous worker thread: "kernels" (standin_launch) take known times, events complete
 * when the worker reaches them, hipEventElapsedTime answers hipErrorNotReady before that, and
 * any call can be made to fail with an arbitrary (also unknown) error code. Loaded with
 * LD_PRELOAD in front of the real runtime, so the timeline's real FFI path runs against it.
 * Counters let tests check what the timeline did (events created, records, syncs).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#define HIP_SUCCESS 0
#define HIP_ERROR_NOT_READY 600
#define QUEUE 65536

typedef struct {
    int complete;
    uint64_t at_ns;
} Event;

typedef struct {
    int is_event;
    uint64_t ns;
    Event *event;
} Op;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t work = PTHREAD_COND_INITIALIZER;
static pthread_cond_t idle = PTHREAD_COND_INITIALIZER;
static Op queue[QUEUE];
static size_t head, tail; /* ops in [head, tail) */
static int running;       /* the worker is executing an op */
static int started;
static pthread_t worker;

/* Counters, read by standin_counters. */
enum { C_EVENT_CREATE, C_EVENT_DESTROY, C_RECORD, C_SYNC, C_ELAPSED, C_STREAM_CREATE,
       C_STREAM_DESTROY, C_QUERY, C_COUNT };
static long counters[C_COUNT];

/* Failure injection: the next call of `fail_which` returns `fail_code`. */
enum { F_NONE, F_RECORD, F_SYNC, F_ELAPSED, F_CREATE };
static int fail_which = F_NONE, fail_code;
static int capturing;

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void *run(void *arg) {
    (void)arg;
    pthread_mutex_lock(&mu);
    for (;;) {
        while (head == tail) pthread_cond_wait(&work, &mu);
        Op op = queue[head % QUEUE];
        head++;
        running = 1;
        pthread_mutex_unlock(&mu);
        if (!op.is_event) {
            /* A kernel: busy for its duration. */
            uint64_t end = now_ns() + op.ns;
            struct timespec ts = {(time_t)(op.ns / 1000000000ull), (long)(op.ns % 1000000000ull)};
            nanosleep(&ts, NULL);
            while (now_ns() < end) {}
        }
        pthread_mutex_lock(&mu);
        if (op.is_event) {
            op.event->at_ns = now_ns();
            op.event->complete = 1;
        }
        running = 0;
        if (head == tail) pthread_cond_broadcast(&idle);
    }
    return NULL;
}

/* Called with mu held. */
static void push(Op op) {
    if (!started) {
        pthread_create(&worker, NULL, run, NULL);
        started = 1;
    }
    queue[tail % QUEUE] = op;
    tail++;
    pthread_cond_signal(&work);
}

static int injected(int which) {
    if (fail_which == which) {
        fail_which = F_NONE;
        return fail_code;
    }
    return HIP_SUCCESS;
}

/* ---- the HIP API subset */

int hipGetDeviceCount(int *count) {
    *count = 1;
    return HIP_SUCCESS;
}

int hipStreamCreate(void **stream) {
    pthread_mutex_lock(&mu);
    counters[C_STREAM_CREATE]++;
    pthread_mutex_unlock(&mu);
    *stream = (void *)0x57AE;
    return HIP_SUCCESS;
}

int hipStreamDestroy(void *stream) {
    (void)stream;
    pthread_mutex_lock(&mu);
    counters[C_STREAM_DESTROY]++;
    pthread_mutex_unlock(&mu);
    return HIP_SUCCESS;
}

int hipStreamIsCapturing(void *stream, int *status) {
    (void)stream;
    pthread_mutex_lock(&mu);
    *status = capturing;
    pthread_mutex_unlock(&mu);
    return HIP_SUCCESS;
}

int hipEventCreate(void **event) {
    pthread_mutex_lock(&mu);
    int code = injected(F_CREATE);
    if (code == HIP_SUCCESS) counters[C_EVENT_CREATE]++;
    pthread_mutex_unlock(&mu);
    if (code != HIP_SUCCESS) return code;
    *event = calloc(1, sizeof(Event));
    return HIP_SUCCESS;
}

int hipEventDestroy(void *event) {
    pthread_mutex_lock(&mu);
    counters[C_EVENT_DESTROY]++;
    pthread_mutex_unlock(&mu);
    free(event);
    return HIP_SUCCESS;
}

int hipEventRecord(void *event, void *stream) {
    (void)stream;
    pthread_mutex_lock(&mu);
    int code = injected(F_RECORD);
    if (code == HIP_SUCCESS) {
        counters[C_RECORD]++;
        Event *e = event;
        e->complete = 0;
        Op op = {1, 0, e};
        push(op);
    }
    pthread_mutex_unlock(&mu);
    return code;
}

int hipEventElapsedTime(float *ms, void *start, void *stop) {
    pthread_mutex_lock(&mu);
    counters[C_ELAPSED]++;
    int code = injected(F_ELAPSED);
    Event *a = start, *b = stop;
    if (code == HIP_SUCCESS && !(a->complete && b->complete)) code = HIP_ERROR_NOT_READY;
    if (code == HIP_SUCCESS) *ms = (float)(((double)b->at_ns - (double)a->at_ns) / 1e6);
    pthread_mutex_unlock(&mu);
    return code;
}

/* Whether the stream reached the event: hipErrorNotReady until the worker completes it. */
int hipEventQuery(void *event) {
    pthread_mutex_lock(&mu);
    counters[C_QUERY]++;
    Event *e = event;
    int code = e->complete ? HIP_SUCCESS : HIP_ERROR_NOT_READY;
    pthread_mutex_unlock(&mu);
    return code;
}

int hipStreamSynchronize(void *stream) {
    (void)stream;
    pthread_mutex_lock(&mu);
    counters[C_SYNC]++;
    while (head != tail || running) pthread_cond_wait(&idle, &mu);
    int code = injected(F_SYNC);
    pthread_mutex_unlock(&mu);
    return code;
}

const char *hipGetErrorString(int code) {
    switch (code) {
    case 0: return "hipSuccess";
    case 100: return "hipErrorNoDevice";
    case 600: return "hipErrorNotReady";
    case 719: return "hipErrorLaunchFailure";
    default: return "unknown error (stand-in runtime)";
    }
}

/* ---- control, for tests */

/* Queue a kernel of `ns` nanoseconds on the stream. */
void standin_launch(uint64_t ns) {
    pthread_mutex_lock(&mu);
    Op op = {0, ns, NULL};
    push(op);
    pthread_mutex_unlock(&mu);
}

/* The next call of kind `which` (1 record, 2 sync, 3 elapsed, 4 event create) returns `code`. */
void standin_fail_next(int which, int code) {
    pthread_mutex_lock(&mu);
    fail_which = which;
    fail_code = code;
    pthread_mutex_unlock(&mu);
}

void standin_set_capturing(int status) {
    pthread_mutex_lock(&mu);
    capturing = status;
    pthread_mutex_unlock(&mu);
}

/* Copy the counters (event creates, destroys, records, syncs, elapsed queries, stream creates,
 * stream destroys, event queries) into out[0..8]. */
void standin_counters(long *out) {
    pthread_mutex_lock(&mu);
    for (int i = 0; i < C_COUNT; i++) out[i] = counters[i];
    pthread_mutex_unlock(&mu);
}
