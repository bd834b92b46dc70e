/* A stand-in for the HIP runtime (libamdhip64), for conformance tests without a GPU.
 *
 * It exports the HIP functions brickprof's HIP timeline calls. Each stream is an in-order
 * queue run by its own asynchronous worker thread: "kernels" (standin_launch) take known times,
 * events complete when their stream's worker reaches them (at once on an idle stream),
 * hipEventElapsedTime answers hipErrorNotReady before that (also between events of different
 * streams: one device clock), hipEventSynchronize waits for one event, hipStreamSynchronize for
 * one stream, and any call can be made to fail with an arbitrary (also unknown) error code. The device clock is the host's
 * CLOCK_MONOTONIC, or a known drift and offset from it (standin_set_clock), so a test can check
 * that calibration recovers it. Loaded with LD_PRELOAD in front of the real runtime, so the
 * timeline's real FFI path runs against it. Counters let tests check what the timeline did
 * (events created, records, syncs), and per stream how many waits were made on it. One device
 * reports known attributes (hipDeviceGetAttribute, hipDeviceGetName) for the device report.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define HIP_SUCCESS 0
#define HIP_ERROR_INVALID_HANDLE 400
#define HIP_ERROR_NOT_READY 600
#define QUEUE 16384

struct Stream;

typedef struct {
    int recorded;
    int complete;
    uint64_t at_ns;         /* device clock */
    struct Stream *stream;  /* where it was last recorded */
} Event;

typedef struct {
    int is_event;
    uint64_t ns;
    Event *event;
} Op;

typedef struct Stream {
    Op ops[QUEUE];
    size_t head, tail; /* ops in [head, tail) */
    int running;       /* the worker is executing an op */
    int started, stop;
    pthread_t worker;
    pthread_cond_t work, idle;
    long waits; /* hipStreamSynchronize of it, hipEventSynchronize of its events */
} Stream;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t reached = PTHREAD_COND_INITIALIZER;

/* Counters, read by standin_counters. */
enum { C_EVENT_CREATE, C_EVENT_DESTROY, C_RECORD, C_SYNC, C_ELAPSED, C_STREAM_CREATE,
       C_STREAM_DESTROY, C_QUERY, C_EVENT_SYNC, C_COUNT };
static long counters[C_COUNT];

/* Failure injection: the next call of `fail_which` returns `fail_code`. */
enum { F_NONE, F_RECORD, F_SYNC, F_ELAPSED, F_CREATE, F_EVENT_SYNC };
static int fail_which = F_NONE, fail_code;
static int capturing;

/* The device clock: host + offset + (host - epoch) * drift. */
static double drift;
static int64_t offset_ns;
static uint64_t epoch_ns;

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Called with mu held. */
static uint64_t device_now(void) {
    uint64_t host = now_ns();
    return (uint64_t)((int64_t)host + offset_ns + (int64_t)((double)(host - epoch_ns) * drift));
}

static void *run(void *arg) {
    Stream *s = arg;
    pthread_mutex_lock(&mu);
    for (;;) {
        while (s->head == s->tail && !s->stop) pthread_cond_wait(&s->work, &mu);
        if (s->head == s->tail) break; /* stopped and drained */
        Op op = s->ops[s->head % QUEUE];
        s->head++;
        s->running = 1;
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
            op.event->at_ns = device_now();
            op.event->complete = 1;
            pthread_cond_broadcast(&reached);
        }
        s->running = 0;
        if (s->head == s->tail) pthread_cond_broadcast(&s->idle);
    }
    pthread_mutex_unlock(&mu);
    return NULL;
}

/* Called with mu held. */
static void push(Stream *s, Op op) {
    if (!s->started) {
        pthread_create(&s->worker, NULL, run, s);
        s->started = 1;
    }
    while (s->tail - s->head >= QUEUE) pthread_cond_wait(&s->idle, &mu);
    s->ops[s->tail % QUEUE] = op;
    s->tail++;
    pthread_cond_signal(&s->work);
}

/* Called with mu held. */
static void wait_idle(Stream *s) {
    while (s->head != s->tail || s->running) pthread_cond_wait(&s->idle, &mu);
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

/* The stream hipStreamCreate made last (a timeline's anchor stream is made after its own). */
static Stream *last_stream;

int hipStreamCreate(void **stream) {
    Stream *s = calloc(1, sizeof(Stream));
    if (s == NULL) return 2; /* hipErrorOutOfMemory */
    pthread_cond_init(&s->work, NULL);
    pthread_cond_init(&s->idle, NULL);
    pthread_mutex_lock(&mu);
    counters[C_STREAM_CREATE]++;
    last_stream = s;
    pthread_mutex_unlock(&mu);
    *stream = s;
    return HIP_SUCCESS;
}

/* Waits for the stream's work, stops its worker, frees it. */
int hipStreamDestroy(void *stream) {
    Stream *s = stream;
    if (s == NULL) return HIP_ERROR_INVALID_HANDLE;
    pthread_mutex_lock(&mu);
    counters[C_STREAM_DESTROY]++;
    wait_idle(s);
    s->stop = 1;
    pthread_cond_signal(&s->work);
    int started = s->started;
    pthread_mutex_unlock(&mu);
    if (started) pthread_join(s->worker, NULL);
    pthread_cond_destroy(&s->work);
    pthread_cond_destroy(&s->idle);
    free(s);
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
    /* An event its stream has still to reach: wait, so the worker never touches freed memory
     * (the real runtime releases it asynchronously). */
    Event *e = event;
    while (e->recorded && !e->complete) pthread_cond_wait(&reached, &mu);
    pthread_mutex_unlock(&mu);
    free(event);
    return HIP_SUCCESS;
}

int hipEventRecord(void *event, void *stream) {
    if (event == NULL || stream == NULL) return HIP_ERROR_INVALID_HANDLE;
    pthread_mutex_lock(&mu);
    int code = injected(F_RECORD);
    if (code == HIP_SUCCESS) {
        counters[C_RECORD]++;
        Event *e = event;
        e->recorded = 1;
        e->complete = 0;
        e->stream = stream;
        Stream *s = stream;
        if (s->head == s->tail && !s->running) {
            /* An idle stream reaches the event at once (a busy one when its worker gets there). */
            e->at_ns = device_now();
            e->complete = 1;
            pthread_cond_broadcast(&reached);
        } else {
            Op op = {1, 0, e};
            push(stream, op);
        }
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
    Stream *s = stream;
    if (s == NULL) return HIP_ERROR_INVALID_HANDLE;
    pthread_mutex_lock(&mu);
    counters[C_SYNC]++;
    s->waits++;
    wait_idle(s);
    int code = injected(F_SYNC);
    pthread_mutex_unlock(&mu);
    return code;
}

/* Waits until the event's stream reached it (at once for an event never recorded). */
int hipEventSynchronize(void *event) {
    Event *e = event;
    if (e == NULL) return HIP_ERROR_INVALID_HANDLE;
    pthread_mutex_lock(&mu);
    counters[C_EVENT_SYNC]++;
    if (e->recorded) e->stream->waits++;
    while (e->recorded && !e->complete) pthread_cond_wait(&reached, &mu);
    int code = injected(F_EVENT_SYNC);
    pthread_mutex_unlock(&mu);
    return code;
}

/* ---- the device report (spec/work-accounting.md "Device peaks"): one device, with an MI250X
 * GCD's figures for the hipDeviceAttribute_t values brickprof reads; others are unknown. */

#define HIP_ERROR_INVALID_VALUE 1
#define HIP_ERROR_INVALID_DEVICE 101

/* The current device: 0 unless hipSetDevice chose another (the stand-in's one device is 0;
 * a timeline made on another one reports hipErrorInvalidDevice). */
static int current_device = 0;

int hipSetDevice(int device) {
    current_device = device;
    return HIP_SUCCESS;
}

int hipGetDevice(int *device) {
    *device = current_device;
    return HIP_SUCCESS;
}

int hipDeviceGetName(char *name, int len, int device) {
    if (device != 0) return HIP_ERROR_INVALID_DEVICE;
    if (len < 1) return HIP_ERROR_INVALID_VALUE;
    strncpy(name, "brickprof stand-in runtime", (size_t)len - 1);
    name[len - 1] = 0;
    return HIP_SUCCESS;
}

int hipDeviceGetAttribute(int *value, int attribute, int device) {
    if (device != 0) return HIP_ERROR_INVALID_DEVICE;
    switch (attribute) {
    case 5: *value = 1700000; return HIP_SUCCESS;  /* ClockRate, kHz */
    case 19: *value = 8 << 20; return HIP_SUCCESS; /* L2CacheSize, bytes */
    case 59: *value = 4096; return HIP_SUCCESS;    /* MemoryBusWidth, bits */
    case 60: *value = 1600000; return HIP_SUCCESS; /* MemoryClockRate, kHz */
    case 63: *value = 110; return HIP_SUCCESS;     /* MultiprocessorCount */
    default: return HIP_ERROR_INVALID_VALUE;
    }
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

/* Queue a kernel of `ns` nanoseconds on `stream`. */
void standin_launch(void *stream, uint64_t ns) {
    pthread_mutex_lock(&mu);
    Op op = {0, ns, NULL};
    push(stream, op);
    pthread_mutex_unlock(&mu);
}

/* The next call of kind `which` (1 record, 2 stream sync, 3 elapsed, 4 event create, 5 event
 * sync) returns `code`. */
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

/* Copy up to `n` counters (event creates, destroys, records, stream syncs, elapsed queries,
 * stream creates, stream destroys, event queries, event syncs) into out; returns how many
 * there are. */
int standin_counters(long *out, int n) {
    pthread_mutex_lock(&mu);
    for (int i = 0; i < C_COUNT && i < n; i++) out[i] = counters[i];
    pthread_mutex_unlock(&mu);
    return C_COUNT;
}

/* The stream created last (NULL before the first). */
void *standin_last_stream(void) {
    pthread_mutex_lock(&mu);
    void *s = last_stream;
    pthread_mutex_unlock(&mu);
    return s;
}

/* Waits made on `stream`: its synchronizations and those of events recorded on it. */
long standin_stream_waits(void *stream) {
    pthread_mutex_lock(&mu);
    long w = ((Stream *)stream)->waits;
    pthread_mutex_unlock(&mu);
    return w;
}

/* From now on, device time = host time + offset_ns + (host time since now) * drift. Set it
 * between timelines: events recorded before and after are on different clocks. */
void standin_set_clock(double new_drift, int64_t new_offset_ns) {
    pthread_mutex_lock(&mu);
    epoch_ns = now_ns();
    drift = new_drift;
    offset_ns = new_offset_ns;
    pthread_mutex_unlock(&mu);
}
