/* A stand-in for CUPTI's activity API (libcupti.so), for the CUPTI timeline's tests without a
 * GPU (spec/sync-modes.md "CUPTI"). The test names it libcupti.so in a temporary directory and
 * re-runs itself with that directory first in LD_LIBRARY_PATH.
 *
 * What it models, from the records of a real H200 (tests/fixtures/cupti/):
 * - "launches" (cupti_standin_launch, _memcpy, _memset) run in order on one worker thread,
 *   each taking a known time; each gets the next correlation id; its activity record (kernel:
 *   the 216-byte CUpti_ActivityKernel10 layout; memcpy, memset) is written when it completes;
 * - every API call (launches, cupti_standin_api, begin/end capture) writes a runtime API record
 *   when it returns, and, while an id is pushed on the calling thread's stack of a kind, an
 *   external-correlation record of that kind's top id first; external-correlation records are
 *   written only while RUNTIME (or DRIVER) records are enabled, as on the H200;
 * - a launch between begin and end capture on its thread is captured: API and external records,
 *   no kernel record;
 * - records arrive ONLY when flushed: cuptiActivityFlushAll hands the completed records to a
 *   delivery thread that calls the buffer callbacks (activity records first, in reverse order,
 *   in a buffer of their own; then the API and external records), and returns when it is done;
 * - the push/pop stacks are per thread; popping an empty stack is CUPTI_ERROR_QUEUE_EMPTY;
 * - CUPTI_STANDIN_HELD=1 in the environment: another subscriber holds CUPTI, every call
 *   answers CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED (39), as under Nsight Compute;
 * - cuptiGetTimestamp is CLOCK_REALTIME, as on the H200;
 * - graphs, as the fixture shows them: one subscriber (cuptiSubscribe; 39 when held) gets the
 *   resource callbacks. A launch captured on its thread adds a kernel node to the capture's
 *   graph and calls GRAPHNODE_CREATED on the launching thread, inside the launch call.
 *   cupti_standin_instantiate clones the graph into a new one (new node ids: graph id << 32 |
 *   index), calling GRAPHNODE_CREATED then GRAPHNODE_CLONED for each node, plus one extra
 *   kernel-typed node CREATED and never cloned that runs nothing (the fixture's graph 2 has
 *   such a node). cupti_standin_graph_launch is one API call (cudaGraphLaunch) whose kernels
 *   all carry its correlation id, the executable graph's node ids and graph id, and no
 *   external-correlation record of their own.
 * Test hooks: cupti_standin_* below. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>

enum { OK = 0, NOT_INITIALIZED = 15, MAX_LIMIT = 12, QUEUE_EMPTY = 18, INVALID_KIND = 21, HELD = 39, INVALID_PARAM = 1 };
enum { K_MEMCPY = 1, K_MEMSET = 2, K_DRIVER = 4, K_RUNTIME = 5, K_CONC = 10, K_EXT = 39 };
enum { OP_KERNEL = 0, OP_MEMCPY = 1, OP_MEMSET = 2 };
/* cbids of the stand-in's runtime calls, named by cuptiGetCallbackName. */
enum { CB_LAUNCH = 1, CB_MEMCPY = 2, CB_MEMSET = 3, CB_MALLOC = 4, CB_BEGIN = 5, CB_END = 6,
       CB_GRAPH_LAUNCH = 7 };
static const char *CB_NAMES[] = {"?", "cudaLaunchKernel_v7000", "cudaMemcpyAsync_v3020",
                                 "cudaMemsetAsync_v3020", "cudaMalloc_v3020",
                                 "cudaStreamBeginCapture_v10000", "cudaStreamEndCapture_v10000",
                                 "cudaGraphLaunch_v10000"};
/* The resource domain and its graph-node callbacks. */
enum { DOMAIN_RESOURCE = 3, CBID_GRAPHNODE_CREATED = 13, CBID_GRAPHNODE_CLONED = 20 };

typedef void (*CallbackFn)(void *, uint32_t, uint32_t, const void *);
typedef struct { void *context; void *stream; void *descriptor; } ResourceData;
typedef struct {
    void *graph, *original_graph, *node, *original_node;
    int node_type;
    void *dependency, *graph_exec;
} GraphData;

/* Graphs: nodes with ids, a kernel duration and stream each. */
#define MAX_GRAPHS 32
#define MAX_NODES 256
typedef struct { uint64_t id; uint64_t ns; uint32_t stream; int runs; } Node;
typedef struct { uint32_t id; int n; Node nodes[MAX_NODES]; } Graph;
static Graph graphs[MAX_GRAPHS];
static int n_graphs;
static CallbackFn subscriber;
static void *subscriber_data;
static int resource_on;
static __thread Graph *capture_graph;

typedef void (*RequestFn)(uint8_t **, size_t *, size_t *);
typedef void (*CompleteFn)(void *, uint32_t, uint8_t *, size_t, size_t);

#define SIZE_KERNEL 216
#define SIZE_MEMORY 80
#define SIZE_EXT 24
#define SIZE_API 40
#define MAX_RECORDS 8192

typedef struct { uint32_t kind; uint8_t bytes[SIZE_KERNEL]; } Rec;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static RequestFn request_cb;
static CompleteFn complete_cb;
static int enabled[64];
static uint32_t next_correlation;
/* Completed records not yet delivered: activity ones, and API/external ones. */
static Rec *acts, *apis;
static int n_acts, n_apis;
static long flushes, deliveries, pushes, pops, launches_run, lost;
/* Sampled tracing: enable and disable calls, cuptiFinalize calls, records written. */
static long enables, disables, finalizes, written;
static int finalized;

/* The worker's queue. */
/* `traced`: whether the activity's kind was enabled when it was launched (CUPTI decides at
 * launch; a record of an activity launched while enabled comes even if disabled since). */
typedef struct { int op; uint64_t ns; uint32_t correlation, stream; uint64_t node; uint32_t graph; int traced; } Job;
static Job queue[4096];
static int q_head, q_tail, busy;
static pthread_t worker;
static int worker_started;
/* The log of activity spans, in launch order (for the test to compare). */
static uint64_t span_start[MAX_RECORDS], span_end[MAX_RECORDS];
static long spans;

/* Delivery. */
static pthread_t deliverer;
static int deliver_requested, deliver_done_gen, deliver_gen;

#define STACK 64
static __thread uint64_t stack_ids[8][STACK];
static __thread int stack_len[8];
static __thread int capturing;

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static int held(void) {
    const char *h = getenv("CUPTI_STANDIN_HELD");
    return h && h[0] == '1';
}

static void put32(uint8_t *b, int at, uint32_t v) { memcpy(b + at, &v, 4); }
static void put64(uint8_t *b, int at, uint64_t v) { memcpy(b + at, &v, 8); }

static void add(Rec **list, int *n, Rec *r) {
    written++;
    if (*n >= MAX_RECORDS) { lost++; return; }
    if (!*list) *list = calloc(MAX_RECORDS, sizeof(Rec));
    (*list)[(*n)++] = *r;
}

static void sleep_ns(uint64_t ns) {
    struct timespec t = {(time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull)};
    nanosleep(&t, NULL);
}

static void *run(void *arg) {
    (void)arg;
    pthread_mutex_lock(&mu);
    for (;;) {
        while (q_head == q_tail) pthread_cond_wait(&cv, &mu);
        Job j = queue[q_head % 4096];
        busy = 1;
        pthread_mutex_unlock(&mu);
        uint64_t start = now_ns();
        sleep_ns(j.ns);
        uint64_t end = now_ns();
        if (end <= start) end = start + 1;
        pthread_mutex_lock(&mu);
        q_head++;
        busy = 0;
        if (spans < MAX_RECORDS) { span_start[spans] = start; span_end[spans] = end; }
        spans++;
        launches_run++;
        Rec r;
        memset(&r, 0, sizeof r);
        if (j.op == OP_KERNEL) {
            if (j.traced) {
                r.kind = K_CONC;
                put32(r.bytes, 0, K_CONC);
                put64(r.bytes, 16, start);
                put64(r.bytes, 24, end);
                put64(r.bytes, 32, end);
                put32(r.bytes, 40, 0);
                put32(r.bytes, 44, 1);
                put32(r.bytes, 48, j.stream);
                put32(r.bytes, 92, j.correlation);
                put64(r.bytes, 144, j.node);
                put32(r.bytes, 156, j.graph);
                add(&acts, &n_acts, &r);
            }
        } else {
            int k = j.op == OP_MEMCPY ? K_MEMCPY : K_MEMSET;
            if (j.traced) {
                r.kind = k;
                put32(r.bytes, 0, k);
                put64(r.bytes, 8, 4096);
                put64(r.bytes, 16, start);
                put64(r.bytes, 24, end);
                put32(r.bytes, 32, 0);
                put32(r.bytes, 36, 1);
                put32(r.bytes, 40, j.stream);
                put32(r.bytes, 44, j.correlation);
                add(&acts, &n_acts, &r);
            }
        }
        pthread_cond_broadcast(&cv);
    }
    return NULL;
}

static void start_worker(void) {
    if (!worker_started) {
        worker_started = 1;
        pthread_create(&worker, NULL, run, NULL);
        pthread_detach(worker);
    }
}

static size_t record_size(uint32_t kind) {
    switch (kind) {
    case K_CONC: return SIZE_KERNEL;
    case K_MEMCPY: case K_MEMSET: return SIZE_MEMORY;
    case K_EXT: return SIZE_EXT;
    default: return SIZE_API;
    }
}

/* Write `n` records of `list` (reversed when `reverse`) into buffers from the client. */
static void deliver_list(Rec *list, int n, int reverse) {
    int i = 0;
    while (i < n) {
        uint8_t *buf = NULL;
        size_t size = 0, max = 0;
        request_cb(&buf, &size, &max);
        if (!buf || size < SIZE_KERNEL) { lost += n - i; return; }
        size_t used = 0;
        while (i < n) {
            Rec *r = &list[reverse ? n - 1 - i : i];
            size_t s = record_size(r->kind);
            if (used + s > size) break;
            memcpy(buf + used, r->bytes, s);
            used += s;
            i++;
        }
        deliveries++;
        complete_cb(NULL, 0, buf, size, used);
    }
}

static void *deliver_loop(void *arg) {
    (void)arg;
    pthread_mutex_lock(&mu);
    for (;;) {
        while (!deliver_requested) pthread_cond_wait(&cv, &mu);
        deliver_requested = 0;
        int gen = deliver_gen;
        Rec *a = acts, *p = apis;
        int na = n_acts, np = n_apis;
        acts = NULL; apis = NULL; n_acts = 0; n_apis = 0;
        pthread_mutex_unlock(&mu);
        if (complete_cb && request_cb) {
            deliver_list(a, na, 1); /* out of order: activity first, reversed */
            deliver_list(p, np, 0);
        }
        free(a);
        free(p);
        pthread_mutex_lock(&mu);
        deliver_done_gen = gen;
        pthread_cond_broadcast(&cv);
    }
    return NULL;
}

int cuptiActivityRegisterCallbacks(RequestFn req, CompleteFn done) {
    if (held()) return HELD;
    if (!req || !done) return INVALID_PARAM;
    pthread_mutex_lock(&mu);
    request_cb = req;
    complete_cb = done;
    finalized = 0;
    static int started;
    if (!started) {
        started = 1;
        pthread_create(&deliverer, NULL, deliver_loop, NULL);
        pthread_detach(deliverer);
    }
    pthread_mutex_unlock(&mu);
    return OK;
}

int cuptiActivityEnable(uint32_t kind) {
    if (held()) return HELD;
    if (kind >= 64) return INVALID_KIND;
    pthread_mutex_lock(&mu);
    if (finalized) { pthread_mutex_unlock(&mu); return NOT_INITIALIZED; }
    enabled[kind] = 1;
    enables++;
    pthread_mutex_unlock(&mu);
    return OK;
}

int cuptiActivityDisable(uint32_t kind) {
    if (held()) return HELD;
    if (kind >= 64) return INVALID_KIND;
    pthread_mutex_lock(&mu);
    enabled[kind] = 0;
    disables++;
    pthread_mutex_unlock(&mu);
    return OK;
}

int cuptiActivityFlushAll(uint32_t flag) {
    (void)flag;
    if (held()) return HELD;
    pthread_mutex_lock(&mu);
    flushes++;
    int gen = ++deliver_gen;
    deliver_requested = 1;
    pthread_cond_broadcast(&cv);
    while (deliver_done_gen < gen) pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
    return OK;
}

int cuptiActivityGetNextRecord(uint8_t *buffer, size_t valid, uint8_t **record) {
    uint8_t *at;
    if (*record == NULL) {
        at = buffer;
    } else {
        uint32_t kind;
        memcpy(&kind, *record, 4);
        at = *record + record_size(kind);
    }
    if (at + 4 > buffer + valid) return MAX_LIMIT;
    *record = at;
    return OK;
}

int cuptiActivityPushExternalCorrelationId(uint32_t kind, uint64_t id) {
    if (held()) return HELD;
    if (kind >= 8 || stack_len[kind] >= STACK) return INVALID_PARAM;
    stack_ids[kind][stack_len[kind]++] = id;
    __atomic_add_fetch(&pushes, 1, __ATOMIC_RELAXED);
    return OK;
}

int cuptiActivityPopExternalCorrelationId(uint32_t kind, uint64_t *id) {
    if (held()) return HELD;
    if (kind >= 8) return INVALID_PARAM;
    if (stack_len[kind] == 0) return QUEUE_EMPTY;
    stack_len[kind]--;
    if (id) *id = stack_ids[kind][stack_len[kind]];
    __atomic_add_fetch(&pops, 1, __ATOMIC_RELAXED);
    return OK;
}

int cuptiGetTimestamp(uint64_t *t) {
    *t = now_ns();
    return OK;
}

int cuptiGetCallbackName(uint32_t domain, uint32_t cbid, const char **name) {
    if (domain != 2 || cbid == 0 || cbid > CB_GRAPH_LAUNCH) return INVALID_PARAM;
    *name = CB_NAMES[cbid];
    return OK;
}

int cuptiGetResultString(uint32_t code, const char **text) {
    switch (code) {
    case OK: *text = "CUPTI_SUCCESS"; return OK;
    case HELD: *text = "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED"; return OK;
    case QUEUE_EMPTY: *text = "CUPTI_ERROR_QUEUE_EMPTY"; return OK;
    default: *text = "CUPTI_ERROR_UNKNOWN"; return OK;
    }
}

/* The node a captured launch made, for its callback once `mu` is released. */
static __thread Node *created_node;
static __thread Graph *created_graph;

static Graph *new_graph(void) {
    if (n_graphs >= MAX_GRAPHS) return NULL;
    Graph *g = &graphs[n_graphs++];
    g->id = (uint32_t)n_graphs;
    g->n = 0;
    return g;
}

/* Call the subscriber's resource callback for a node (outside `mu`). */
static void node_callback(uint32_t cbid, Graph *g, Node *n, Graph *og, Node *on) {
    if (!subscriber || !resource_on) return;
    GraphData d = {g, og, n, on, 0, NULL, NULL};
    ResourceData r = {NULL, NULL, &d};
    subscriber(subscriber_data, DOMAIN_RESOURCE, cbid, &r);
}

/* One API call on this thread: external records for each stack's top, then (at return) its
 * API record; a launch also goes to the worker unless captured. Call with `mu` held. */
static uint32_t api_call(uint32_t cbid, int op, uint64_t ns, uint32_t stream) {
    uint64_t start = now_ns();
    uint32_t corr = ++next_correlation;
    int api_on = enabled[K_RUNTIME] || enabled[K_DRIVER];
    Rec r;
    if (api_on && enabled[K_EXT]) {
        for (uint32_t k = 0; k < 8; k++) {
            if (stack_len[k] == 0) continue;
            memset(&r, 0, sizeof r);
            r.kind = K_EXT;
            put32(r.bytes, 0, K_EXT);
            put32(r.bytes, 4, k);
            put64(r.bytes, 8, stack_ids[k][stack_len[k] - 1]);
            put32(r.bytes, 16, corr);
            add(&apis, &n_apis, &r);
        }
    }
    if (op >= 0 && !capturing) {
        start_worker();
        int k = op == OP_KERNEL ? K_CONC : op == OP_MEMCPY ? K_MEMCPY : K_MEMSET;
        queue[q_tail % 4096] = (Job){op, ns, corr, stream, 0, 0, enabled[k]};
        q_tail++;
        pthread_cond_broadcast(&cv);
    }
    if (op == OP_KERNEL && capturing && capture_graph && capture_graph->n < MAX_NODES) {
        Graph *g = capture_graph;
        Node *n = &g->nodes[g->n];
        n->id = ((uint64_t)g->id << 32) | (uint64_t)g->n;
        n->ns = ns;
        n->stream = stream;
        n->runs = 1;
        g->n++;
        created_node = n;
        created_graph = g;
    }
    if (enabled[K_RUNTIME]) {
        memset(&r, 0, sizeof r);
        r.kind = K_RUNTIME;
        put32(r.bytes, 0, K_RUNTIME);
        put32(r.bytes, 4, cbid);
        put64(r.bytes, 8, start);
        put64(r.bytes, 16, now_ns());
        put32(r.bytes, 24, (uint32_t)getpid());
        put32(r.bytes, 28, (uint32_t)syscall(SYS_gettid));
        put32(r.bytes, 32, corr);
        add(&apis, &n_apis, &r);
    }
    return corr;
}

/* Hooks. */
uint32_t cupti_standin_launch(uint32_t stream, uint64_t ns) {
    pthread_mutex_lock(&mu);
    created_node = NULL;
    uint32_t c = api_call(CB_LAUNCH, OP_KERNEL, ns, stream);
    Node *n = created_node;
    Graph *g = created_graph;
    pthread_mutex_unlock(&mu);
    if (n) node_callback(CBID_GRAPHNODE_CREATED, g, n, NULL, NULL);
    return c;
}

/* Instantiate the graph captured last on this thread (or graph `id`): clone its nodes into a
 * new graph, with the callbacks; returns the executable graph's id (0: none). */
uint32_t cupti_standin_instantiate(uint32_t id) {
    pthread_mutex_lock(&mu);
    Graph *src = (id >= 1 && (int)id <= n_graphs) ? &graphs[id - 1] : NULL;
    Graph *g = src ? new_graph() : NULL;
    if (g) {
        for (int i = 0; i < src->n; i++) {
            g->nodes[i] = src->nodes[i];
            g->nodes[i].id = ((uint64_t)g->id << 32) | (uint64_t)i;
        }
        g->n = src->n;
        /* The extra node: kernel-typed, created, never cloned, never run. */
        if (g->n < MAX_NODES) {
            Node *x = &g->nodes[g->n];
            x->id = ((uint64_t)g->id << 32) | (uint64_t)g->n;
            x->ns = 0;
            x->stream = 0;
            x->runs = 0;
        }
    }
    pthread_mutex_unlock(&mu);
    if (!g) return 0;
    for (int i = 0; i < g->n; i++) {
        node_callback(CBID_GRAPHNODE_CREATED, g, &g->nodes[i], NULL, NULL);
        node_callback(CBID_GRAPHNODE_CLONED, g, &g->nodes[i], src, &src->nodes[i]);
    }
    if (g->n < MAX_NODES) node_callback(CBID_GRAPHNODE_CREATED, g, &g->nodes[g->n], NULL, NULL);
    return g->id;
}

/* The id of the graph this thread's last capture made (0: none). */
uint32_t cupti_standin_captured_graph(void) {
    return capture_graph ? capture_graph->id : 0;
}

/* Launch executable graph `id`: one API call; each node's kernel in order, with the call's
 * correlation id and the node's id. Returns the correlation id. */
uint32_t cupti_standin_graph_launch(uint32_t id) {
    pthread_mutex_lock(&mu);
    uint32_t c = api_call(CB_GRAPH_LAUNCH, -1, 0, 0);
    Graph *g = (id >= 1 && (int)id <= n_graphs) ? &graphs[id - 1] : NULL;
    if (g && !capturing) {
        start_worker();
        for (int i = 0; i < g->n; i++) {
            if (!g->nodes[i].runs) continue;
            queue[q_tail % 4096] =
                (Job){OP_KERNEL, g->nodes[i].ns, c, g->nodes[i].stream, g->nodes[i].id, g->id,
                      enabled[K_CONC]};
            q_tail++;
        }
        pthread_cond_broadcast(&cv);
    }
    pthread_mutex_unlock(&mu);
    return c;
}

int cuptiSubscribe(void **handle, CallbackFn callback, void *userdata) {
    if (held()) return HELD;
    if (!handle) return INVALID_PARAM;
    pthread_mutex_lock(&mu);
    subscriber = callback;
    subscriber_data = userdata;
    *handle = (void *)&subscriber;
    pthread_mutex_unlock(&mu);
    return OK;
}

int cuptiEnableDomain(uint32_t enable, void *handle, uint32_t domain) {
    if (held()) return HELD;
    if (!handle) return INVALID_PARAM;
    if (domain == DOMAIN_RESOURCE) resource_on = enable != 0;
    return OK;
}

int cuptiEnableCallback(uint32_t enable, void *handle, uint32_t domain, uint32_t cbid) {
    (void)cbid;
    return cuptiEnableDomain(enable, handle, domain);
}

int cuptiUnsubscribe(void *handle) {
    if (!handle) return INVALID_PARAM;
    subscriber = NULL;
    return OK;
}

int cuptiGetGraphNodeId(void *node, uint64_t *id) {
    if (!node || !id) return INVALID_PARAM;
    *id = ((Node *)node)->id;
    return OK;
}

int cuptiGetGraphId(void *graph, uint32_t *id) {
    if (!graph || !id) return INVALID_PARAM;
    *id = ((Graph *)graph)->id;
    return OK;
}

uint32_t cupti_standin_memcpy(uint32_t stream, uint64_t ns) {
    pthread_mutex_lock(&mu);
    uint32_t c = api_call(CB_MEMCPY, OP_MEMCPY, ns, stream);
    pthread_mutex_unlock(&mu);
    return c;
}

uint32_t cupti_standin_memset(uint32_t stream, uint64_t ns) {
    pthread_mutex_lock(&mu);
    uint32_t c = api_call(CB_MEMSET, OP_MEMSET, ns, stream);
    pthread_mutex_unlock(&mu);
    return c;
}

/* A call that launches nothing (cudaMalloc). */
void cupti_standin_api(void) {
    pthread_mutex_lock(&mu);
    api_call(CB_MALLOC, -1, 0, 0);
    pthread_mutex_unlock(&mu);
}

void cupti_standin_capture(int begin) {
    pthread_mutex_lock(&mu);
    if (begin) {
        api_call(CB_BEGIN, -1, 0, 0);
        capturing = 1;
        capture_graph = new_graph();
    } else {
        capturing = 0;
        api_call(CB_END, -1, 0, 0);
    }
    pthread_mutex_unlock(&mu);
}

/* Wait until every launch so far has run (its record is then completed, not delivered). */
void cupti_standin_sync(void) {
    pthread_mutex_lock(&mu);
    while (q_head != q_tail || busy) pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
}

/* Launches run so far (the next one's index in the span log). */
long cupti_standin_spans(void) {
    pthread_mutex_lock(&mu);
    long n = spans;
    pthread_mutex_unlock(&mu);
    return n;
}

/* The device start and end of the i-th launch run; 0 when it has not run. */
int cupti_standin_span(long i, uint64_t *start, uint64_t *end) {
    pthread_mutex_lock(&mu);
    int ok = i >= 0 && i < spans && i < MAX_RECORDS;
    if (ok) { *start = span_start[i]; *end = span_end[i]; }
    pthread_mutex_unlock(&mu);
    return ok ? 0 : 1;
}

/* Counters: flushes, buffers delivered, pushes, pops, launches run, records lost, enables,
 * disables, finalizes, records written. */
int cupti_standin_counters(long *out, int n) {
    long c[10];
    pthread_mutex_lock(&mu);
    c[0] = flushes; c[1] = deliveries; c[2] = pushes; c[3] = pops; c[4] = launches_run; c[5] = lost;
    c[6] = enables; c[7] = disables; c[8] = finalizes; c[9] = written;
    pthread_mutex_unlock(&mu);
    for (int i = 0; i < n && i < 10; i++) out[i] = c[i];
    return 10;
}

/* cuptiFinalize: detach. Records already written are delivered (as a flush), every kind is
 * disabled, the subscriber is gone, and enabling again needs the buffer callbacks registered
 * again (as CUPTI requires after a finalize). */
int cuptiFinalize(void) {
    if (held()) return HELD;
    cuptiActivityFlushAll(0);
    pthread_mutex_lock(&mu);
    for (int k = 0; k < 64; k++) enabled[k] = 0;
    subscriber = NULL;
    resource_on = 0;
    finalized = 1;
    finalizes++;
    pthread_mutex_unlock(&mu);
    return OK;
}
