/* A stand-in for the CUDA driver (libcuda.so), for conformance tests without a GPU.
 *
 * cudarc 0.19 (dynamic loading) opens "libcuda.so" (then libcuda.so.1, ...) with dlopen and
 * looks each driver function up at its first call, so this library exports only the functions
 * brickprof's CUDA path calls. The test names it libcuda.so in a temporary directory and
 * re-runs itself with that directory in LD_LIBRARY_PATH.
 *
 * What it models:
 * - two devices, each with a primary context; the current context is per thread (none at
 *   first). Calls that need one (creating streams and events, recording an event, syncing the
 *   context) fail with CUDA_ERROR_INVALID_CONTEXT when no context is current, and
 *   cuEventRecord also when the event, the stream or the current context disagree;
 * - each stream an in-order queue run by its own asynchronous worker thread: "kernels"
 *   (standin_launch, cuLaunchKernel) take known times; an event completes when its stream's
 *   worker reaches it (at once on an idle stream); cuEventQuery answers CUDA_ERROR_NOT_READY and cuEventElapsedTime
 *   CUDA_ERROR_NOT_READY until then (elapsed times between streams too: one device clock);
 *   cuEventSynchronize waits for one event, cuStreamSynchronize for one stream,
 *   cuCtxSynchronize for all; each stream counts the waits made on it (standin_stream_waits);
 * - the device clock: the host's CLOCK_MONOTONIC, or a known drift and offset from it
 *   (standin_set_clock), so a test can check that calibration recovers it;
 * - stream capture: cuStreamIsCapturing reports the status standin_set_capturing (or
 *   cuStreamBeginCapture_v2) set; a stream synchronization, an event query or an event
 *   synchronization while capturing fails and invalidates the capture, as in the driver's
 *   global capture mode (so a test sees a profiler that would break an engine's graph);
 *   a launch while capturing is captured, not run;
 * - graphs (spec/sync-modes.md "Graph capture"): during a capture begun with
 *   cuStreamBeginCapture_v2, kernels launched on the capturing stream (cuLaunchKernel,
 *   standin_launch) and external event records (cuEventRecordWithFlags with
 *   CU_EVENT_RECORD_EXTERNAL) on it become the graph's nodes, in order; a plain cuEventRecord
 *   there makes no node (in the driver it only expresses a dependency). cuStreamEndCapture
 *   returns the graph; cuGraphGetNodes, cuGraphNodeGetType and cuGraphEventRecordNodeGetEvent
 *   read it; cuGraphInstantiateWithFlags copies its nodes into an executable; cuGraphLaunch
 *   enqueues the executable's nodes on the stream's worker (kernels take their times, record
 *   nodes record the event each node holds at launch), so replays are asynchronous and several
 *   may be in flight; cuGraphExecEventRecordNodeSetEvent (a node of the graph the executable
 *   was instantiated from) changes the event of later launches only; cuGraphExecUpdate_v2
 *   takes the nodes' parameters from a graph of the same shape (else
 *   CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED); an event recorded by several launches in
 *   flight is complete when its latest record is reached;
 * - device attributes (cuDeviceGetAttribute, cuDeviceGetName) with known figures, for the
 *   device report (spec/work-accounting.md "Device peaks");
 * - what the conformance kit (tests/cuda_device.rs) also calls: device memory (host memory
 *   here), a module whose one kernel brickprof_spin(ns, out) spins like the kit's PTX one and
 *   writes its own start and end, launches;
 * - errors on demand (standin_fail_next), counters of every call (standin_counters), and the
 *   device start and end of every kernel run, by the order kernels were enqueued
 *   (standin_kernels_enqueued, standin_kernel_span).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum {
    CUDA_SUCCESS = 0,
    CUDA_ERROR_INVALID_VALUE = 1,
    CUDA_ERROR_NOT_INITIALIZED = 3,
    CUDA_ERROR_NO_DEVICE = 100,
    CUDA_ERROR_INVALID_DEVICE = 101,
    CUDA_ERROR_INVALID_CONTEXT = 201,
    CUDA_ERROR_INVALID_HANDLE = 400,
    CUDA_ERROR_NOT_FOUND = 500,
    CUDA_ERROR_NOT_READY = 600,
    CUDA_ERROR_LAUNCH_FAILED = 719,
    CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED = 900,
    CUDA_ERROR_STREAM_CAPTURE_INVALIDATED = 901,
    CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE = 910,
    CUDA_ERROR_UNKNOWN = 999,
};

#define DEVICES 2
#define EVENT_DISABLE_TIMING 2
#define CAPTURE_NONE 0
#define CAPTURE_ACTIVE 1
#define CAPTURE_INVALIDATED 2

typedef struct {
    int device;
} Context;

struct Stream;

typedef struct {
    Context *ctx;
    unsigned flags;
    int recorded; /* recorded at least once */
    int pending;  /* records enqueued and not yet reached: complete when 0 */
    uint64_t at_ns; /* device clock, at the last record reached */
    struct Stream *stream; /* where it was last recorded */
} Event;

typedef struct {
    int is_event;
    uint64_t ns;
    Event *event;
    uint64_t *out; /* a kernel's (start, end) record, when it writes one */
    uint64_t seq;  /* a kernel's number, in the order kernels were enqueued */
} Op;

#define QUEUE 16384

typedef struct Stream {
    Context *ctx;
    Op ops[QUEUE];
    size_t head, tail; /* ops in [head, tail) */
    int running;       /* the worker is executing an op */
    int started, stop;
    pthread_t worker;
    pthread_cond_t work, idle;
    long waits; /* cuStreamSynchronize of it, cuEventSynchronize of its events */
    struct Stream *next, *prev; /* every live stream, for cuCtxSynchronize */
} Stream;

/* A graph's node: a kernel (its time and where it writes its start and end) or an event
 * record. */
#define NODE_KERNEL 0
#define NODE_EVENT_RECORD 7
#define EVENT_RECORD_EXTERNAL 1

typedef struct {
    int type;
    uint64_t ns;
    uint64_t *out;
    Event *event;
} Node;

#define GRAPH_MAGIC 0x6EA9u
#define EXEC_MAGIC 0xE8ECu

/* A captured graph: its nodes in capture order (one stream: a chain). Node handles are the
 * addresses of the nodes' own allocations. */
typedef struct {
    unsigned magic;
    Node **nodes;
    size_t n, cap;
} Graph;

/* An instantiated graph: a copy of each node's parameters, and the handle of the node it was
 * instantiated from (cuGraphExec*SetEvent names nodes of that graph). */
typedef struct {
    unsigned magic;
    size_t n;
    Node *nodes;
    Node **from;
} Exec;

static Context contexts[DEVICES] = {{0}, {1}};
static int retained[DEVICES];
static int initialized;
static __thread Context *current;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t reached = PTHREAD_COND_INITIALIZER;
static Stream *streams; /* the live ones */

/* Counters, read by standin_counters (in this order). */
enum {
    C_EVENT_CREATE, C_EVENT_DESTROY, C_RECORD, C_STREAM_SYNC, C_ELAPSED, C_STREAM_CREATE,
    C_STREAM_DESTROY, C_GET_CURRENT, C_SET_CURRENT, C_IS_CAPTURING, C_QUERY, C_EVENT_SYNC,
    C_RECORD_WHILE_CAPTURING, C_INVALID_CONTEXT, C_CTX_SYNC, C_LAUNCH, C_RECORD_EXTERNAL,
    C_GRAPH_LAUNCH, C_SET_EVENT, C_EXEC_UPDATE, C_GRAPH_GET_NODES, C_GRAPHS_LIVE, C_EXECS_LIVE,
    C_COUNT
};
static long counters[C_COUNT];

/* Failure injection: the next call of kind `fail_which` returns `fail_code`. */
enum { F_NONE, F_RECORD, F_STREAM_SYNC, F_ELAPSED, F_EVENT_CREATE, F_IS_CAPTURING, F_QUERY,
       F_SET_CURRENT };
static void *const MODULE = (void *)0x30D;
static void *const FUNCTION = (void *)0xF00;
static int fail_which = F_NONE, fail_code;
static int capturing = CAPTURE_NONE;
static Graph *capture_graph;   /* the graph cuStreamBeginCapture_v2 builds */
static Stream *capture_stream; /* the stream it captures */

/* The device clock: host + offset + (host - epoch) * drift (standin_set_clock). */
static double drift;
static int64_t offset_ns;
static uint64_t epoch_ns;

/* Every kernel's device start and end, by its number (the last KERNEL_LOG of them), so that a
 * test checks a brick against what its kernels took (standin_kernel_span). */
#define KERNEL_LOG 65536
static uint64_t kernels_enqueued;
static uint64_t kernel_log[KERNEL_LOG][2];

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Device time at host time `host` (mu held). */
static uint64_t device_at(uint64_t host) {
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
        uint64_t start = 0, at = 0;
        if (!op.is_event) {
            /* A kernel: busy for its duration. */
            start = now_ns();
            uint64_t end = start + op.ns;
            struct timespec ts = {(time_t)(op.ns / 1000000000ull), (long)(op.ns % 1000000000ull)};
            nanosleep(&ts, NULL);
            while ((at = now_ns()) < end) {}
        }
        pthread_mutex_lock(&mu);
        if (!op.is_event) {
            kernel_log[op.seq % KERNEL_LOG][0] = device_at(start);
            kernel_log[op.seq % KERNEL_LOG][1] = device_at(at);
        }
        if (op.out) {
            op.out[0] = device_at(start);
            op.out[1] = device_at(at);
        }
        if (op.is_event) {
            op.event->at_ns = device_at(now_ns());
            op.event->pending--;
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

/* Enqueue a kernel of `ns` on `s`, numbered (mu held). */
static void push_kernel(Stream *s, uint64_t ns, uint64_t *out) {
    kernel_log[kernels_enqueued % KERNEL_LOG][0] = 0;
    kernel_log[kernels_enqueued % KERNEL_LOG][1] = 0;
    Op op = {0, ns, NULL, out, kernels_enqueued++};
    push(s, op);
}

/* Called with mu held. */
static int injected(int which) {
    if (fail_which == which) {
        fail_which = F_NONE;
        return fail_code;
    }
    return CUDA_SUCCESS;
}

/* Called with mu held: the calling thread has a current context. */
static int need_context(void) {
    if (current) return CUDA_SUCCESS;
    counters[C_INVALID_CONTEXT]++;
    return CUDA_ERROR_INVALID_CONTEXT;
}

/* Called with mu held. */
static void wait_idle(Stream *s) {
    while (s->head != s->tail || s->running) pthread_cond_wait(&s->idle, &mu);
}

/* Append a node to `g` (mu held). */
static int add_node(Graph *g, Node n) {
    if (g->n == g->cap) {
        size_t cap = g->cap ? 2 * g->cap : 16;
        Node **nodes = realloc(g->nodes, cap * sizeof(Node *));
        if (nodes == NULL) return CUDA_ERROR_UNKNOWN;
        g->nodes = nodes;
        g->cap = cap;
    }
    Node *node = malloc(sizeof(Node));
    if (node == NULL) return CUDA_ERROR_UNKNOWN;
    *node = n;
    g->nodes[g->n++] = node;
    return CUDA_SUCCESS;
}

static void free_graph(Graph *g) {
    for (size_t i = 0; i < g->n; i++) free(g->nodes[i]);
    free(g->nodes);
    g->magic = 0;
    free(g);
}

/* ---- initialization, devices, contexts */

int cuInit(unsigned flags) {
    (void)flags;
    pthread_mutex_lock(&mu);
    initialized = 1;
    pthread_mutex_unlock(&mu);
    return CUDA_SUCCESS;
}

int cuDeviceGetCount(int *count) {
    if (!initialized) return CUDA_ERROR_NOT_INITIALIZED;
    *count = DEVICES;
    return CUDA_SUCCESS;
}

int cuDeviceGet(int *device, int ordinal) {
    if (!initialized) return CUDA_ERROR_NOT_INITIALIZED;
    if (ordinal < 0 || ordinal >= DEVICES) return CUDA_ERROR_INVALID_DEVICE;
    *device = ordinal;
    return CUDA_SUCCESS;
}

/* What each device reports for the attributes brickprof's device report reads (CUdevice_attribute
 * values): device 0 an H100 SXM's figures; device 1 an A100's compute, but no memory clock (0)
 * and an L2 size it refuses as an unknown attribute. Every other attribute is 0 (no memory
 * pools, no other capability). */
enum {
    A_CLOCK_RATE = 13, A_MULTIPROCESSOR_COUNT = 16, A_MEMORY_CLOCK_RATE = 36,
    A_GLOBAL_MEMORY_BUS_WIDTH = 37, A_L2_CACHE_SIZE = 38, A_CC_MAJOR = 75, A_CC_MINOR = 76,
};

int cuDeviceGetAttribute(int *value, int attribute, int device) {
    if (!initialized) return CUDA_ERROR_NOT_INITIALIZED;
    if (device < 0 || device >= DEVICES) return CUDA_ERROR_INVALID_DEVICE;
    int h100 = device == 0;
    switch (attribute) {
    case A_MULTIPROCESSOR_COUNT: *value = h100 ? 132 : 108; break;
    case A_CLOCK_RATE: *value = h100 ? 1980000 : 1410000; break; /* kHz */
    case A_MEMORY_CLOCK_RATE: *value = h100 ? 2619000 : 0; break; /* kHz */
    case A_GLOBAL_MEMORY_BUS_WIDTH: *value = 5120; break; /* bits */
    case A_L2_CACHE_SIZE:
        if (!h100) return CUDA_ERROR_INVALID_VALUE;
        *value = 50 << 20;
        break;
    case A_CC_MAJOR: *value = h100 ? 9 : 8; break;
    case A_CC_MINOR: *value = 0; break;
    default: *value = 0;
    }
    return CUDA_SUCCESS;
}

int cuDevicePrimaryCtxRetain(void **ctx, int device) {
    if (!initialized) return CUDA_ERROR_NOT_INITIALIZED;
    if (device < 0 || device >= DEVICES) return CUDA_ERROR_INVALID_DEVICE;
    pthread_mutex_lock(&mu);
    retained[device]++;
    pthread_mutex_unlock(&mu);
    *ctx = &contexts[device];
    return CUDA_SUCCESS;
}

int cuDevicePrimaryCtxRelease_v2(int device) {
    if (device < 0 || device >= DEVICES) return CUDA_ERROR_INVALID_DEVICE;
    pthread_mutex_lock(&mu);
    int code = retained[device] > 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
    if (code == CUDA_SUCCESS) retained[device]--;
    pthread_mutex_unlock(&mu);
    return code;
}

int cuCtxGetCurrent(void **ctx) {
    pthread_mutex_lock(&mu);
    counters[C_GET_CURRENT]++;
    pthread_mutex_unlock(&mu);
    *ctx = current;
    return CUDA_SUCCESS;
}

int cuCtxSetCurrent(void *ctx) {
    pthread_mutex_lock(&mu);
    counters[C_SET_CURRENT]++;
    int code = injected(F_SET_CURRENT);
    pthread_mutex_unlock(&mu);
    if (code != CUDA_SUCCESS) return code;
    if (ctx != NULL && ctx != &contexts[0] && ctx != &contexts[1]) return CUDA_ERROR_INVALID_CONTEXT;
    current = ctx;
    return CUDA_SUCCESS;
}

int cuCtxSynchronize(void) {
    pthread_mutex_lock(&mu);
    counters[C_CTX_SYNC]++;
    int code = need_context();
    if (code == CUDA_SUCCESS)
        for (Stream *s = streams; s; s = s->next) wait_idle(s);
    pthread_mutex_unlock(&mu);
    return code;
}

/* ---- streams */

int cuStreamCreate(void **stream, unsigned flags) {
    (void)flags;
    Stream *s = calloc(1, sizeof(Stream));
    if (s == NULL) return CUDA_ERROR_UNKNOWN;
    pthread_mutex_lock(&mu);
    int code = need_context();
    if (code == CUDA_SUCCESS) {
        counters[C_STREAM_CREATE]++;
        s->ctx = current;
        pthread_cond_init(&s->work, NULL);
        pthread_cond_init(&s->idle, NULL);
        s->next = streams;
        if (streams) streams->prev = s;
        streams = s;
    }
    pthread_mutex_unlock(&mu);
    if (code != CUDA_SUCCESS) {
        free(s);
        return code;
    }
    *stream = s;
    return CUDA_SUCCESS;
}

/* Waits for the stream's work (the driver would finish it asynchronously), stops its worker,
 * frees it. */
int cuStreamDestroy_v2(void *stream) {
    Stream *s = stream;
    if (s == NULL) return CUDA_ERROR_INVALID_HANDLE;
    pthread_mutex_lock(&mu);
    counters[C_STREAM_DESTROY]++;
    wait_idle(s);
    s->stop = 1;
    pthread_cond_signal(&s->work);
    if (s->prev) s->prev->next = s->next; else streams = s->next;
    if (s->next) s->next->prev = s->prev;
    int started = s->started;
    pthread_mutex_unlock(&mu);
    if (started) pthread_join(s->worker, NULL);
    pthread_cond_destroy(&s->work);
    pthread_cond_destroy(&s->idle);
    free(s);
    return CUDA_SUCCESS;
}

int cuStreamIsCapturing(void *stream, int *status) {
    if (stream == NULL) return CUDA_ERROR_INVALID_HANDLE;
    pthread_mutex_lock(&mu);
    counters[C_IS_CAPTURING]++;
    int code = injected(F_IS_CAPTURING);
    if (code == CUDA_SUCCESS) *status = capturing;
    pthread_mutex_unlock(&mu);
    return code;
}

int cuStreamSynchronize(void *stream) {
    Stream *s = stream;
    if (s == NULL) return CUDA_ERROR_INVALID_HANDLE;
    pthread_mutex_lock(&mu);
    counters[C_STREAM_SYNC]++;
    s->waits++;
    int code = CUDA_SUCCESS;
    if (capturing != CAPTURE_NONE) {
        /* Not allowed while capturing: the driver invalidates the capture. */
        capturing = CAPTURE_INVALIDATED;
        code = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    } else {
        wait_idle(s);
        code = injected(F_STREAM_SYNC);
    }
    pthread_mutex_unlock(&mu);
    return code;
}

/* ---- events */

int cuEventCreate(void **event, unsigned flags) {
    pthread_mutex_lock(&mu);
    int code = need_context();
    if (code == CUDA_SUCCESS) code = injected(F_EVENT_CREATE);
    if (code == CUDA_SUCCESS) counters[C_EVENT_CREATE]++;
    pthread_mutex_unlock(&mu);
    if (code != CUDA_SUCCESS) return code;
    Event *e = calloc(1, sizeof(Event));
    e->ctx = current;
    e->flags = flags;
    *event = e;
    return CUDA_SUCCESS;
}

int cuEventDestroy_v2(void *event) {
    pthread_mutex_lock(&mu);
    counters[C_EVENT_DESTROY]++;
    /* Destroying an event the worker has still to reach: wait, so the worker never touches
     * freed memory (the real driver releases it asynchronously). */
    Event *e = event;
    while (e->pending) pthread_cond_wait(&reached, &mu);
    pthread_mutex_unlock(&mu);
    free(event);
    return CUDA_SUCCESS;
}

/* Enqueue a record of `e` on `s` (mu held): reached at once on an idle stream, else when the
 * worker gets there. */
static void enqueue_record(Event *e, Stream *s) {
    e->recorded = 1;
    e->stream = s;
    if (s->head == s->tail && !s->running) {
        e->at_ns = device_at(now_ns());
        pthread_cond_broadcast(&reached);
    } else {
        e->pending++;
        Op op = {1, 0, e, NULL, 0};
        push(s, op);
    }
}

/* Whether `s` is being captured into a graph by cuStreamBeginCapture_v2 (mu held): its work
 * becomes nodes. */
static int capturing_into_graph(Stream *s) {
    return capturing == CAPTURE_ACTIVE && capture_graph != NULL && s == capture_stream;
}

/* cuEventRecord and cuEventRecordWithFlags. During a capture of the stream, an external record
 * becomes an event-record node of the graph; a plain one makes no node and records nothing
 * (in the driver it only expresses a dependency). */
static int record(Event *e, Stream *s, unsigned flags) {
    if (e == NULL || s == NULL) return CUDA_ERROR_INVALID_HANDLE;
    if (flags & ~EVENT_RECORD_EXTERNAL) return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&mu);
    int code = need_context();
    if (code == CUDA_SUCCESS && (e->ctx != s->ctx || current != s->ctx)) {
        counters[C_INVALID_CONTEXT]++;
        code = CUDA_ERROR_INVALID_CONTEXT;
    }
    if (code == CUDA_SUCCESS) code = injected(F_RECORD);
    if (code == CUDA_SUCCESS) {
        if (flags & EVENT_RECORD_EXTERNAL) {
            counters[C_RECORD_EXTERNAL]++;
        } else {
            counters[C_RECORD]++;
            if (capturing != CAPTURE_NONE) counters[C_RECORD_WHILE_CAPTURING]++;
        }
        if (capturing_into_graph(s)) {
            if (flags & EVENT_RECORD_EXTERNAL) {
                Node n = {NODE_EVENT_RECORD, 0, NULL, e};
                code = add_node(capture_graph, n);
            }
        } else if (capturing == CAPTURE_NONE || !(flags & EVENT_RECORD_EXTERNAL)) {
            /* (standin_set_capturing without a graph: plain records still run, as before.) */
            enqueue_record(e, s);
        }
    }
    pthread_mutex_unlock(&mu);
    return code;
}

int cuEventRecord(void *event, void *stream) {
    return record(event, stream, 0);
}

int cuEventRecordWithFlags(void *event, void *stream, unsigned flags) {
    return record(event, stream, flags);
}

int cuEventQuery(void *event) {
    Event *e = event;
    if (e == NULL) return CUDA_ERROR_INVALID_HANDLE;
    pthread_mutex_lock(&mu);
    counters[C_QUERY]++;
    int code = injected(F_QUERY);
    if (code == CUDA_SUCCESS && capturing == CAPTURE_ACTIVE) {
        /* Modelled on global capture mode: an unsafe call while a capture is under way
         * invalidates it. */
        capturing = CAPTURE_INVALIDATED;
        code = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
    /* An event never recorded has no work to wait for: success, as in the driver. */
    if (code == CUDA_SUCCESS && e->pending) code = CUDA_ERROR_NOT_READY;
    pthread_mutex_unlock(&mu);
    return code;
}

int cuEventSynchronize(void *event) {
    Event *e = event;
    if (e == NULL) return CUDA_ERROR_INVALID_HANDLE;
    pthread_mutex_lock(&mu);
    counters[C_EVENT_SYNC]++;
    if (e->recorded) e->stream->waits++;
    if (capturing == CAPTURE_ACTIVE) {
        capturing = CAPTURE_INVALIDATED;
        pthread_mutex_unlock(&mu);
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
    while (e->pending) pthread_cond_wait(&reached, &mu);
    pthread_mutex_unlock(&mu);
    return CUDA_SUCCESS;
}

int cuEventElapsedTime(float *ms, void *start, void *end) {
    Event *a = start, *b = end;
    if (a == NULL || b == NULL) return CUDA_ERROR_INVALID_HANDLE;
    pthread_mutex_lock(&mu);
    counters[C_ELAPSED]++;
    int code = injected(F_ELAPSED);
    if (code == CUDA_SUCCESS &&
        ((a->flags | b->flags) & EVENT_DISABLE_TIMING || !a->recorded || !b->recorded))
        code = CUDA_ERROR_INVALID_HANDLE;
    if (code == CUDA_SUCCESS && (a->pending || b->pending)) code = CUDA_ERROR_NOT_READY;
    if (code == CUDA_SUCCESS) *ms = (float)(((double)b->at_ns - (double)a->at_ns) / 1e6);
    pthread_mutex_unlock(&mu);
    return code;
}

/* ---- errors */

static const char *error_text(int code, int name) {
    switch (code) {
    case CUDA_SUCCESS: return name ? "CUDA_SUCCESS" : "no error";
    case CUDA_ERROR_INVALID_VALUE: return name ? "CUDA_ERROR_INVALID_VALUE" : "invalid argument";
    case CUDA_ERROR_NOT_INITIALIZED:
        return name ? "CUDA_ERROR_NOT_INITIALIZED" : "initialization error";
    case CUDA_ERROR_NO_DEVICE: return name ? "CUDA_ERROR_NO_DEVICE" : "no CUDA-capable device is detected";
    case CUDA_ERROR_INVALID_DEVICE: return name ? "CUDA_ERROR_INVALID_DEVICE" : "invalid device ordinal";
    case CUDA_ERROR_INVALID_CONTEXT: return name ? "CUDA_ERROR_INVALID_CONTEXT" : "invalid device context";
    case CUDA_ERROR_INVALID_HANDLE: return name ? "CUDA_ERROR_INVALID_HANDLE" : "invalid resource handle";
    case CUDA_ERROR_NOT_FOUND: return name ? "CUDA_ERROR_NOT_FOUND" : "named symbol not found";
    case CUDA_ERROR_NOT_READY: return name ? "CUDA_ERROR_NOT_READY" : "device not ready";
    case CUDA_ERROR_LAUNCH_FAILED: return name ? "CUDA_ERROR_LAUNCH_FAILED" : "unspecified launch failure";
    case CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED:
        return name ? "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED"
                    : "operation not permitted when stream is capturing";
    case CUDA_ERROR_STREAM_CAPTURE_INVALIDATED:
        return name ? "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED"
                    : "operation failed due to a previous error during capture";
    case CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE:
        return name ? "CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE"
                    : "the graph update was not performed because it included changes which \
violated constraints specific to instantiated graph update";
    case CUDA_ERROR_UNKNOWN: return name ? "CUDA_ERROR_UNKNOWN" : "unknown error";
    default: return NULL;
    }
}

int cuGetErrorString(int code, const char **text) {
    const char *t = error_text(code, 0);
    if (t == NULL) return CUDA_ERROR_INVALID_VALUE;
    *text = t;
    return CUDA_SUCCESS;
}

int cuGetErrorName(int code, const char **text) {
    const char *t = error_text(code, 1);
    if (t == NULL) return CUDA_ERROR_INVALID_VALUE;
    *text = t;
    return CUDA_SUCCESS;
}

/* ---- what the conformance kit (tests/cuda_device.rs) calls besides the timeline: device
 * memory (host memory here), a module whose one kernel spins like the PTX one, capture */

int cuDeviceGetName(char *name, int len, int device) {
    if (device < 0 || device >= DEVICES) return CUDA_ERROR_INVALID_DEVICE;
    if (len < 1) return CUDA_ERROR_INVALID_VALUE;
    strncpy(name, "brickprof stand-in driver", (size_t)len - 1);
    name[len - 1] = 0;
    return CUDA_SUCCESS;
}

int cuMemAlloc_v2(uint64_t *ptr, size_t bytes) {
    pthread_mutex_lock(&mu);
    int code = need_context();
    pthread_mutex_unlock(&mu);
    if (code != CUDA_SUCCESS) return code;
    void *p = calloc(1, bytes ? bytes : 1);
    *ptr = (uint64_t)(uintptr_t)p;
    return CUDA_SUCCESS;
}

int cuMemFree_v2(uint64_t ptr) {
    free((void *)(uintptr_t)ptr);
    return CUDA_SUCCESS;
}

int cuMemcpyDtoH_v2(void *dst, uint64_t src, size_t bytes) {
    pthread_mutex_lock(&mu);
    memcpy(dst, (void *)(uintptr_t)src, bytes);
    pthread_mutex_unlock(&mu);
    return CUDA_SUCCESS;
}

int cuModuleLoadData(void **module, const void *image) {
    pthread_mutex_lock(&mu);
    int code = need_context();
    pthread_mutex_unlock(&mu);
    if (code != CUDA_SUCCESS) return code;
    if (image == NULL || strstr(image, "%globaltimer") == NULL) return CUDA_ERROR_INVALID_VALUE;
    *module = MODULE;
    return CUDA_SUCCESS;
}

int cuModuleGetFunction(void **function, void *module, const char *name) {
    if (module != MODULE) return CUDA_ERROR_INVALID_HANDLE;
    if (strcmp(name, "brickprof_spin") != 0) return CUDA_ERROR_NOT_FOUND;
    *function = FUNCTION;
    return CUDA_SUCCESS;
}

int cuModuleUnload(void *module) {
    return module == MODULE ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

/* A kernel launched on `s` (mu held): a node of the graph being captured from `s`, nothing
 * when the status alone says capturing (standin_set_capturing), else run by the worker. */
static int launch(Stream *s, uint64_t ns, uint64_t *out) {
    if (capturing_into_graph(s)) {
        Node n = {NODE_KERNEL, ns, out, NULL};
        return add_node(capture_graph, n);
    }
    if (capturing == CAPTURE_NONE) {
        push_kernel(s, ns, out);
    }
    return CUDA_SUCCESS;
}

/* brickprof_spin(u64 ns, u64 *out): spins ns, writes its start and end to out[0..2]. */
int cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                   unsigned bz, unsigned shared, void *stream, void **params, void **extra) {
    (void)gx; (void)gy; (void)gz; (void)bx; (void)by; (void)bz; (void)shared; (void)extra;
    if (f != FUNCTION || stream == NULL || params == NULL) return CUDA_ERROR_INVALID_HANDLE;
    pthread_mutex_lock(&mu);
    int code = need_context();
    if (code == CUDA_SUCCESS) {
        counters[C_LAUNCH]++;
        /* The parameters are read now, as the driver copies them at launch and at capture. */
        code = launch(stream, *(uint64_t *)params[0],
                      (uint64_t *)(uintptr_t) * (uint64_t *)params[1]);
    }
    pthread_mutex_unlock(&mu);
    return code;
}

int cuStreamBeginCapture_v2(void *stream, int mode) {
    (void)mode;
    if (stream == NULL) return CUDA_ERROR_INVALID_HANDLE;
    Graph *g = calloc(1, sizeof(Graph));
    if (g == NULL) return CUDA_ERROR_UNKNOWN;
    g->magic = GRAPH_MAGIC;
    pthread_mutex_lock(&mu);
    int code = capturing == CAPTURE_NONE ? CUDA_SUCCESS : CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    if (code == CUDA_SUCCESS) {
        capturing = CAPTURE_ACTIVE;
        capture_graph = g;
        capture_stream = stream;
        counters[C_GRAPHS_LIVE]++;
    }
    pthread_mutex_unlock(&mu);
    if (code != CUDA_SUCCESS) free(g);
    return code;
}

/* The captured graph; an invalidated capture is an error and its graph is freed. */
int cuStreamEndCapture(void *stream, void **graph) {
    if (stream == NULL) return CUDA_ERROR_INVALID_HANDLE;
    pthread_mutex_lock(&mu);
    int code = capturing == CAPTURE_ACTIVE ? CUDA_SUCCESS : CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    Graph *g = capture_graph;
    if (g == NULL) { /* a status set by standin_set_capturing: an empty graph */
        g = calloc(1, sizeof(Graph));
        g->magic = GRAPH_MAGIC;
        counters[C_GRAPHS_LIVE]++;
    }
    capturing = CAPTURE_NONE;
    capture_graph = NULL;
    capture_stream = NULL;
    if (code != CUDA_SUCCESS) {
        free_graph(g);
        counters[C_GRAPHS_LIVE]--;
    }
    pthread_mutex_unlock(&mu);
    if (code == CUDA_SUCCESS) *graph = g;
    return code;
}

int cuGraphDestroy(void *graph) {
    Graph *g = graph;
    if (g == NULL || g->magic != GRAPH_MAGIC) return CUDA_ERROR_INVALID_HANDLE;
    pthread_mutex_lock(&mu);
    counters[C_GRAPHS_LIVE]--;
    pthread_mutex_unlock(&mu);
    free_graph(g);
    return CUDA_SUCCESS;
}

/* The graph's nodes: with `nodes` NULL, how many; else up to *count of them (the rest of the
 * array NULL), *count set to how many there are. */
int cuGraphGetNodes(void *graph, void **nodes, size_t *count) {
    Graph *g = graph;
    if (g == NULL || g->magic != GRAPH_MAGIC || count == NULL) return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&mu);
    counters[C_GRAPH_GET_NODES]++;
    if (nodes != NULL)
        for (size_t i = 0; i < *count; i++) nodes[i] = i < g->n ? g->nodes[i] : NULL;
    *count = g->n;
    pthread_mutex_unlock(&mu);
    return CUDA_SUCCESS;
}

int cuGraphNodeGetType(void *node, int *type) {
    if (node == NULL || type == NULL) return CUDA_ERROR_INVALID_VALUE;
    *type = ((Node *)node)->type;
    return CUDA_SUCCESS;
}

int cuGraphEventRecordNodeGetEvent(void *node, void **event) {
    Node *n = node;
    if (n == NULL || event == NULL || n->type != NODE_EVENT_RECORD) return CUDA_ERROR_INVALID_VALUE;
    *event = n->event;
    return CUDA_SUCCESS;
}

int cuGraphInstantiateWithFlags(void **exec, void *graph, unsigned long long flags) {
    (void)flags;
    Graph *g = graph;
    if (exec == NULL || g == NULL || g->magic != GRAPH_MAGIC) return CUDA_ERROR_INVALID_VALUE;
    Exec *x = calloc(1, sizeof(Exec));
    if (x == NULL) return CUDA_ERROR_UNKNOWN;
    pthread_mutex_lock(&mu);
    x->magic = EXEC_MAGIC;
    x->n = g->n;
    x->nodes = calloc(g->n ? g->n : 1, sizeof(Node));
    x->from = calloc(g->n ? g->n : 1, sizeof(Node *));
    for (size_t i = 0; i < g->n; i++) {
        x->nodes[i] = *g->nodes[i];
        x->from[i] = g->nodes[i];
    }
    counters[C_EXECS_LIVE]++;
    pthread_mutex_unlock(&mu);
    *exec = x;
    return CUDA_SUCCESS;
}

int cuGraphExecDestroy(void *exec) {
    Exec *x = exec;
    if (x == NULL || x->magic != EXEC_MAGIC) return CUDA_ERROR_INVALID_HANDLE;
    pthread_mutex_lock(&mu);
    counters[C_EXECS_LIVE]--;
    pthread_mutex_unlock(&mu);
    x->magic = 0;
    free(x->nodes);
    free(x->from);
    free(x);
    return CUDA_SUCCESS;
}

/* A replay: the executable's nodes, in order, enqueued on the stream's worker (kernels take
 * their times; record nodes record the event each holds now). */
int cuGraphLaunch(void *exec, void *stream) {
    Exec *x = exec;
    Stream *s = stream;
    if (x == NULL || x->magic != EXEC_MAGIC || s == NULL) return CUDA_ERROR_INVALID_HANDLE;
    pthread_mutex_lock(&mu);
    int code = need_context();
    if (code == CUDA_SUCCESS && capturing != CAPTURE_NONE) code = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    if (code == CUDA_SUCCESS) {
        counters[C_GRAPH_LAUNCH]++;
        for (size_t i = 0; i < x->n; i++) {
            Node *n = &x->nodes[i];
            if (n->type == NODE_KERNEL) {
                push_kernel(s, n->ns, n->out);
            } else {
                Event *e = n->event;
                e->recorded = 1;
                e->stream = s;
                e->pending++;
                Op op = {1, 0, e, NULL, 0};
                push(s, op);
            }
        }
    }
    pthread_mutex_unlock(&mu);
    return code;
}

/* Point an event-record node of the executable (named by the node of the graph it was
 * instantiated from) at another event: for later launches only. */
int cuGraphExecEventRecordNodeSetEvent(void *exec, void *node, void *event) {
    Exec *x = exec;
    if (x == NULL || x->magic != EXEC_MAGIC || event == NULL) return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&mu);
    counters[C_SET_EVENT]++;
    int code = CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < x->n; i++) {
        if (x->from[i] == node && x->nodes[i].type == NODE_EVENT_RECORD) {
            x->nodes[i].event = event;
            code = CUDA_SUCCESS;
            break;
        }
    }
    pthread_mutex_unlock(&mu);
    return code;
}

/* CUgraphExecUpdateResultInfo. */
typedef struct {
    int result; /* 0 success, 2 topology changed */
    void *error_node;
    void *error_from_node;
} UpdateResultInfo;

/* Take every node's parameters (a kernel's time and output, a record node's event) from
 * `graph`, which must have the executable's shape (same count and kinds of nodes, in order). */
int cuGraphExecUpdate_v2(void *exec, void *graph, UpdateResultInfo *info) {
    Exec *x = exec;
    Graph *g = graph;
    if (x == NULL || x->magic != EXEC_MAGIC || g == NULL || g->magic != GRAPH_MAGIC ||
        info == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&mu);
    counters[C_EXEC_UPDATE]++;
    int same = g->n == x->n;
    for (size_t i = 0; same && i < g->n; i++) same = g->nodes[i]->type == x->nodes[i].type;
    info->error_node = NULL;
    info->error_from_node = NULL;
    if (same) {
        for (size_t i = 0; i < g->n; i++) x->nodes[i] = *g->nodes[i];
        info->result = 0;
    } else {
        info->result = 2;
    }
    pthread_mutex_unlock(&mu);
    return same ? CUDA_SUCCESS : CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE;
}

/* ---- control, for tests */

/* Queue a kernel of `ns` nanoseconds on `stream` (a node, when `stream` is being captured into a
 * graph). */
void standin_launch(void *stream, uint64_t ns) {
    pthread_mutex_lock(&mu);
    if (capturing_into_graph(stream)) {
        Node n = {NODE_KERNEL, ns, NULL, NULL};
        add_node(capture_graph, n);
    } else {
        push_kernel(stream, ns, NULL);
    }
    pthread_mutex_unlock(&mu);
}

/* The next call of kind `which` (1 cuEventRecord, 2 cuStreamSynchronize, 3 cuEventElapsedTime,
 * 4 cuEventCreate, 5 cuStreamIsCapturing, 6 cuEventQuery, 7 cuCtxSetCurrent) returns `code`
 * (a CUresult: cudarc reads it as its enum, so only the driver's own codes may be injected). */
void standin_fail_next(int which, int code) {
    pthread_mutex_lock(&mu);
    fail_which = which;
    fail_code = code;
    pthread_mutex_unlock(&mu);
}

/* Set the capture status every stream reports (0 none, 1 active, 2 invalidated). */
void standin_set_capturing(int status) {
    pthread_mutex_lock(&mu);
    capturing = status;
    pthread_mutex_unlock(&mu);
}

/* The capture status (a sync while capturing turns it to 2, invalidated). */
int standin_capturing(void) {
    pthread_mutex_lock(&mu);
    int c = capturing;
    pthread_mutex_unlock(&mu);
    return c;
}

/* Copy up to `n` counters (see the enum above) into out; returns how many there are. */
int standin_counters(long *out, int n) {
    pthread_mutex_lock(&mu);
    for (int i = 0; i < C_COUNT && i < n; i++) out[i] = counters[i];
    pthread_mutex_unlock(&mu);
    return C_COUNT;
}

/* Kernels enqueued so far (the next kernel's number). */
uint64_t standin_kernels_enqueued(void) {
    pthread_mutex_lock(&mu);
    uint64_t n = kernels_enqueued;
    pthread_mutex_unlock(&mu);
    return n;
}

/* Kernel `seq`'s device start and end (ns); -1 if it is not in the log (not yet enqueued, or
 * overwritten), 1 if it has not run yet. */
int standin_kernel_span(uint64_t seq, uint64_t *start, uint64_t *end) {
    pthread_mutex_lock(&mu);
    int code = seq >= kernels_enqueued || kernels_enqueued - seq > KERNEL_LOG ? -1 : 0;
    if (code == 0) {
        *start = kernel_log[seq % KERNEL_LOG][0];
        *end = kernel_log[seq % KERNEL_LOG][1];
        if (*end == 0) code = 1;
    }
    pthread_mutex_unlock(&mu);
    return code;
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
