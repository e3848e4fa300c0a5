/* graphdoctor's CUPTI injection library: what a native CUDA program does with graphs.
 *
 * The CUDA driver loads this library when the program first initialises CUDA, because
 * CUDA_INJECTION64_PATH names it, and calls InitializeInjection. From then on CUPTI calls
 * back on the few driver calls that make, run or break a graph (the same ones graphdoctor's
 * --cupti layer subscribes to from Python), and hands over kernel activity records: the
 * GPU time of each graph launch (the span of its kernels) and of each kernel launched
 * outside a graph (what the same work costs run eagerly). While a capture is open, a copy or
 * memset CUDA runs at once instead of adding it to the graph (a synchronous one, or an
 * asynchronous one on a default stream) is written with its caller's frames.
 *
 * Each event is one line of JSON written with one write(2) to the file descriptor in
 * GRAPHDOCTOR_NATIVE_FD (a pipe graphdoctor reads while the program runs), so a crash
 * loses at most the activity records CUPTI had not handed over. The Python side
 * (graphdoctor/record/native/) turns the lines into graphdoctor's records; this file knows
 * nothing of them. Times are CLOCK_MONOTONIC nanoseconds, Python's perf_counter_ns clock.
 * Frames are return addresses with their module and offset (and the symbol where the
 * dynamic linker knows one); Python resolves file:line where the module has debug info.
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <cupti.h>
#include <dlfcn.h>
#include <execinfo.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_FRAMES 24
#define LINE_BYTES 65536
#define ACTIVITY_BUFFER (4 << 20)
#ifndef KERNEL_RECORD
#define KERNEL_RECORD CUpti_ActivityKernel10
#endif
#define MAX_CAPTURES 64

static int out_fd = -1;
static int64_t cupti_offset;          /* CUPTI's clock minus ours */
static CUpti_SubscriberHandle subscriber;
static pthread_mutex_t capture_lock = PTHREAD_MUTEX_INITIALIZER;
static CUstream capturing[MAX_CAPTURES]; /* streams with a capture open */
static int captures_open;
static __thread int64_t instantiate_began;
static void on_graph_launch(const CUpti_CallbackData *data);

/* Driver calls read through dlsym: libcuda is loaded (it loaded us), and linking against it
 * would need its stub at build time. */
static CUresult (*graph_get_nodes)(CUgraph, CUgraphNode *, size_t *);
static CUresult (*graph_get_edges)(CUgraph, CUgraphNode *, CUgraphNode *, void *, size_t *);
static CUresult (*graph_get_edges_old)(CUgraph, CUgraphNode *, CUgraphNode *, size_t *);
static CUresult (*node_get_type)(CUgraphNode, CUgraphNodeType *);
static CUresult (*kernel_node_params)(CUgraphNode, CUDA_KERNEL_NODE_PARAMS *);
static CUresult (*func_get_name)(const char **, CUfunction);
static CUresult (*kernel_get_name)(const char **, CUkernel);

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* -- output: a line of JSON per event ---------------------------------------------------- */
typedef struct { char *text; size_t used; } Line;

static void put(Line *line, const char *format, ...) {
    if (line->used >= LINE_BYTES - 1) return;
    va_list args;
    va_start(args, format);
    int n = vsnprintf(line->text + line->used, LINE_BYTES - line->used, format, args);
    va_end(args);
    if (n > 0) line->used += (size_t)n < LINE_BYTES - line->used ? (size_t)n : LINE_BYTES - 1 - line->used;
}

static void put_string(Line *line, const char *text) {
    put(line, "\"");
    for (const unsigned char *c = (const unsigned char *)(text ? text : ""); *c; c++) {
        if (*c == '"' || *c == '\\') put(line, "\\%c", *c);
        else if (*c < 0x20) put(line, "\\u%04x", *c);
        else put(line, "%c", *c);
    }
    put(line, "\"");
}

static Line begin_line(const char *kind, int64_t t) {
    Line line = {malloc(LINE_BYTES), 0};
    if (line.text) put(&line, "{\"k\":\"%s\",\"t\":%lld", kind, (long long)t);
    return line;
}

static void end_line(Line *line) {
    if (!line->text) return;
    put(line, "}\n");
    if (line->text[line->used - 1] != '\n') line->text[line->used - 1] = '\n';  /* cut short */
    if (out_fd >= 0) {
        ssize_t written = write(out_fd, line->text, line->used);
        (void)written;  /* a reader that went away: nothing to do but go on */
    }
    free(line->text);
}

/* -- frames: the caller's, without CUDA's, CUPTI's and our own ----------------------------- */
static int ours(const char *module) {
    static const char *skipped[] = {"libcuda.so", "libcudart.so", "libcupti.so",
                                    "libgraphdoctor_inject", NULL};
    for (int i = 0; skipped[i]; i++)
        if (module && strstr(module, skipped[i])) return 1;
    return 0;
}

static void put_stack(Line *line) {
    void *addresses[MAX_FRAMES + 8];
    int count = backtrace(addresses, MAX_FRAMES + 8);
    int kept = 0;
    put(line, ",\"stack\":[");
    for (int i = 1; i < count && kept < MAX_FRAMES; i++) {
        Dl_info info;
        if (!dladdr(addresses[i], &info) || ours(info.dli_fname)) continue;
        put(line, "%s{\"m\":", kept ? "," : "");
        put_string(line, info.dli_fname);
        put(line, ",\"o\":%llu,\"b\":%llu,\"s\":",
            (unsigned long long)((uintptr_t)addresses[i] - (uintptr_t)info.dli_fbase),
            (unsigned long long)(uintptr_t)info.dli_fbase);
        put_string(line, info.dli_sname);
        put(line, "}");
        kept++;
    }
    put(line, "]");
}

/* -- captures in progress ------------------------------------------------------------------ */
static void capture_opened(CUstream stream) {
    pthread_mutex_lock(&capture_lock);
    if (captures_open < MAX_CAPTURES) capturing[captures_open++] = stream;
    pthread_mutex_unlock(&capture_lock);
}

static int is_capturing(CUstream stream) {
    int found = 0;
    pthread_mutex_lock(&capture_lock);
    for (int i = 0; i < captures_open && !found; i++) found = capturing[i] == stream;
    pthread_mutex_unlock(&capture_lock);
    return found;
}

static void capture_closed(CUstream stream) {
    pthread_mutex_lock(&capture_lock);
    for (int i = 0; i < captures_open; i++)
        if (capturing[i] == stream) { capturing[i] = capturing[--captures_open]; break; }
    pthread_mutex_unlock(&capture_lock);
}

/* -- what a graph holds -------------------------------------------------------------------- */
static const char *kernel_name(CUgraphNode node) {
    CUDA_KERNEL_NODE_PARAMS params;
    const char *name = NULL;
    memset(&params, 0, sizeof params);
    if (!kernel_node_params || kernel_node_params(node, &params) != CUDA_SUCCESS) return NULL;
    if (params.func && func_get_name) func_get_name(&name, params.func);
    else if (params.kern && kernel_get_name) kernel_get_name(&name, params.kern);
    return name;
}

static size_t index_of(CUgraphNode *nodes, size_t count, CUgraphNode node) {
    for (size_t i = 0; i < count; i++) if (nodes[i] == node) return i;
    return count;
}

static void put_edges(Line *line, CUgraph graph, CUgraphNode *nodes, size_t count) {
    size_t edges = 0;
    int v2 = graph_get_edges != NULL;
    if (v2 ? graph_get_edges(graph, NULL, NULL, NULL, &edges)
           : (graph_get_edges_old ? graph_get_edges_old(graph, NULL, NULL, &edges) : 1)) return;
    CUgraphNode *from = calloc(edges + 1, sizeof *from), *to = calloc(edges + 1, sizeof *to);
    if (from && to && !(v2 ? graph_get_edges(graph, from, to, NULL, &edges)
                           : graph_get_edges_old(graph, from, to, &edges))) {
        for (size_t i = 0; i < edges; i++)
            put(line, "%s[%zu,%zu]", i ? "," : "", index_of(nodes, count, from[i]),
                index_of(nodes, count, to[i]));
    }
    free(from);
    free(to);
}

static void emit_anatomy(long long graph_key, CUgraph graph) {
    size_t count = 0;
    if (!graph_get_nodes || graph_get_nodes(graph, NULL, &count) != CUDA_SUCCESS) return;
    CUgraphNode *nodes = calloc(count + 1, sizeof *nodes);
    if (!nodes || graph_get_nodes(graph, nodes, &count) != CUDA_SUCCESS) { free(nodes); return; }
    int64_t began = now_ns();
    Line line = begin_line("anatomy", began);
    put(&line, ",\"graph\":%lld,\"types\":[", graph_key);
    for (size_t i = 0; i < count; i++) {
        CUgraphNodeType type = (CUgraphNodeType)-1;
        if (node_get_type) node_get_type(nodes[i], &type);
        put(&line, "%s%d", i ? "," : "", (int)type);
    }
    put(&line, "],\"kernels\":[");
    for (size_t i = 0; i < count; i++) {
        CUgraphNodeType type = (CUgraphNodeType)-1;
        if (node_get_type) node_get_type(nodes[i], &type);
        if (i) put(&line, ",");
        if (type == CU_GRAPH_NODE_TYPE_KERNEL) put_string(&line, kernel_name(nodes[i]));
        else put(&line, "null");
    }
    put(&line, "],\"edges\":[");
    put_edges(&line, graph, nodes, count);
    put(&line, "],\"read_ns\":%lld", (long long)(now_ns() - began));
    end_line(&line);
    free(nodes);
}

/* -- the callbacks ------------------------------------------------------------------------- */
typedef struct { CUstream stream; CUstreamCaptureMode mode; } BeginCapture;
typedef struct { CUstream stream; CUgraph *graph; } EndCapture;
typedef struct { CUgraphExec *exec; CUgraph graph; } Instantiate;
typedef struct { CUevent event; CUstream stream; } EventRecord;
typedef struct { CUstream stream; CUevent event; } WaitEvent;

static void event_line(const char *kind, const CUpti_CallbackData *data, const char *extra) {
    Line line = begin_line(kind, now_ns());
    put(&line, ",\"result\":%d,\"thread\":%lu%s", data->functionReturnValue
        ? (int)*(CUresult *)data->functionReturnValue : 0, (unsigned long)pthread_self(), extra);
    put_stack(&line);
    end_line(&line);
}

static void on_begin_capture(CUpti_CallbackId id, const CUpti_CallbackData *data) {
    if (data->callbackSite != CUPTI_API_EXIT) return;
    const BeginCapture *p = data->functionParams;
    int with_mode = id == CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2 ||
                    id == CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2_ptsz;
    char extra[96];
    snprintf(extra, sizeof extra, ",\"stream\":%llu,\"mode\":%d",
             (unsigned long long)(uintptr_t)p->stream, with_mode ? (int)p->mode : 0);
    if (*(CUresult *)data->functionReturnValue == CUDA_SUCCESS) capture_opened(p->stream);
    event_line("begin_capture", data, extra);
}

static void on_end_capture(const CUpti_CallbackData *data) {
    if (data->callbackSite != CUPTI_API_EXIT) return;
    const EndCapture *p = data->functionParams;
    CUgraph graph = p->graph ? *p->graph : NULL;
    CUresult result = *(CUresult *)data->functionReturnValue;
    char extra[96];
    snprintf(extra, sizeof extra, ",\"stream\":%llu,\"graph\":%llu",
             (unsigned long long)(uintptr_t)p->stream,
             (unsigned long long)(uintptr_t)(result == CUDA_SUCCESS ? graph : NULL));
    capture_closed(p->stream);
    uint32_t graph_id = 0;
    if (result == CUDA_SUCCESS && graph) cuptiGetGraphId(graph, &graph_id);
    snprintf(extra + strlen(extra), sizeof extra - strlen(extra), ",\"graph_id\":%u", graph_id);
    event_line("end_capture", data, extra);
    if (result == CUDA_SUCCESS && graph) emit_anatomy((long long)(uintptr_t)graph, graph);
}

static void on_instantiate(const CUpti_CallbackData *data) {
    if (data->callbackSite == CUPTI_API_ENTER) { instantiate_began = now_ns(); return; }
    const Instantiate *p = data->functionParams;
    CUresult result = *(CUresult *)data->functionReturnValue;
    uint32_t exec_id = 0, graph_id = 0;
    if (result == CUDA_SUCCESS && p->exec) cuptiGetGraphExecId(*p->exec, &exec_id);
    if (result == CUDA_SUCCESS) cuptiGetGraphId(p->graph, &graph_id);
    char extra[224];
    snprintf(extra, sizeof extra,
             ",\"graph\":%llu,\"exec\":%llu,\"exec_id\":%u,\"graph_id\":%u,\"began\":%lld",
             (unsigned long long)(uintptr_t)p->graph,
             (unsigned long long)(uintptr_t)(result == CUDA_SUCCESS && p->exec ? *p->exec : NULL),
             exec_id, graph_id, (long long)instantiate_began);
    event_line("instantiate", data, extra);
    if (result == CUDA_SUCCESS) emit_anatomy((long long)(uintptr_t)p->graph, p->graph);
}

static void on_graph_create(const CUpti_CallbackData *data) {
    if (data->callbackSite != CUPTI_API_EXIT) return;
    CUgraph *graph = *(CUgraph **)data->functionParams;
    char extra[64];
    snprintf(extra, sizeof extra, ",\"graph\":%llu",
             (unsigned long long)(uintptr_t)(graph ? *graph : NULL));
    event_line("create_graph", data, extra);
}

static void on_sync(CUpti_CallbackId id, const CUpti_CallbackData *data) {
    if (data->callbackSite != CUPTI_API_EXIT) return;
    int stream_sync = id == CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize ||
                      id == CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize_ptsz;
    const char *kind = stream_sync ? "stream_synchronize"
                       : id == CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize ? "event_synchronize"
                       : "device_synchronize";
    char extra[96];
    snprintf(extra, sizeof extra, ",\"kind\":\"%s\",\"stream\":%llu", kind,
             (unsigned long long)(stream_sync ? (uintptr_t)*(CUstream *)data->functionParams : 0));
    event_line("sync", data, extra);
}

static void on_stream_op(CUpti_CallbackId id, const CUpti_CallbackData *data) {
    if (data->callbackSite != CUPTI_API_EXIT || !captures_open) return;  /* forks and joins */
    int waits = id == CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent ||
                id == CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent_ptsz;
    CUstream stream = waits ? ((const WaitEvent *)data->functionParams)->stream
                            : ((const EventRecord *)data->functionParams)->stream;
    CUevent event = waits ? ((const WaitEvent *)data->functionParams)->event
                          : ((const EventRecord *)data->functionParams)->event;
    char extra[128];
    snprintf(extra, sizeof extra, ",\"op\":\"%s\",\"stream\":%llu,\"event\":%llu",
             waits ? "wait_event" : "record", (unsigned long long)(uintptr_t)stream,
             (unsigned long long)(uintptr_t)event);
    event_line("stream_op", data, extra);
}

/* -- copies and memsets a capture leaves out ------------------------------------------------
 * With a capture open on a non-blocking stream, a synchronous copy or memset (cudaMemcpy,
 * cudaMemset: the legacy stream, waited for by the host) or an asynchronous one on a default
 * stream is not captured: CUDA runs it now, once, and the graph has no node for it. */
static CUstream async_stream(CUpti_CallbackId id, const void *params) {
    switch (id) {
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync_ptsz:
        return ((const cuMemcpyAsync_params *)params)->hStream;
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2_ptsz:
        return ((const cuMemcpyHtoDAsync_v2_params *)params)->hStream;
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2_ptsz:
        return ((const cuMemcpyDtoHAsync_v2_params *)params)->hStream;
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2_ptsz:
        return ((const cuMemcpyDtoDAsync_v2_params *)params)->hStream;
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async_ptsz:
        return ((const cuMemsetD8Async_params *)params)->hStream;
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD16Async:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD16Async_ptsz:
        return ((const cuMemsetD16Async_params *)params)->hStream;
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async_ptsz:
        return ((const cuMemsetD32Async_params *)params)->hStream;
    default:
        return (CUstream)(uintptr_t)-1;  /* synchronous: no stream named */
    }
}

static void on_copy(CUpti_CallbackId id, const CUpti_CallbackData *data) {
    if (data->callbackSite != CUPTI_API_EXIT || !captures_open) return;
    CUstream stream = async_stream(id, data->functionParams);
    int synchronous = stream == (CUstream)(uintptr_t)-1;
    int default_stream = stream == NULL || stream == CU_STREAM_LEGACY ||
                         stream == CU_STREAM_PER_THREAD;
    if (!synchronous && (!default_stream || is_capturing(stream))) return;  /* captured */
    char extra[192];
    snprintf(extra, sizeof extra, ",\"call\":\"%.64s\",\"stream\":%llu,\"synchronous\":%d",
             data->functionName ? data->functionName : "?",
             (unsigned long long)(synchronous ? 0 : (uintptr_t)stream), synchronous);
    event_line("uncaptured", data, extra);
}

static const CUpti_CallbackId COPIES[] = {
    CUPTI_DRIVER_TRACE_CBID_cuMemcpy, CUPTI_DRIVER_TRACE_CBID_cuMemcpy_ptds,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2, CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2_ptds,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2, CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2_ptds,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoD_v2, CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoD_v2_ptds,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpy2D_v2, CUPTI_DRIVER_TRACE_CBID_cuMemcpy2D_v2_ptds,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpy2DUnaligned_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpy2DUnaligned_v2_ptds,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpy3D_v2, CUPTI_DRIVER_TRACE_CBID_cuMemcpy3D_v2_ptds,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyPeer, CUPTI_DRIVER_TRACE_CBID_cuMemcpyPeer_ptds,
    CUPTI_DRIVER_TRACE_CBID_cuMemsetD8_v2, CUPTI_DRIVER_TRACE_CBID_cuMemsetD8_v2_ptds,
    CUPTI_DRIVER_TRACE_CBID_cuMemsetD16_v2, CUPTI_DRIVER_TRACE_CBID_cuMemsetD16_v2_ptds,
    CUPTI_DRIVER_TRACE_CBID_cuMemsetD32_v2, CUPTI_DRIVER_TRACE_CBID_cuMemsetD32_v2_ptds,
    CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D8_v2, CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D8_v2_ptds,
    CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D16_v2, CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D16_v2_ptds,
    CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D32_v2, CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D32_v2_ptds,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync, CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async, CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuMemsetD16Async, CUPTI_DRIVER_TRACE_CBID_cuMemsetD16Async_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async, CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async_ptsz,
};

static int is_copy(CUpti_CallbackId id) {
    for (size_t i = 0; i < sizeof COPIES / sizeof *COPIES; i++)
        if (COPIES[i] == id) return 1;
    return 0;
}

static void CUPTIAPI on_call(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId id,
                             const void *raw) {
    (void)userdata;
    if (domain != CUPTI_CB_DOMAIN_DRIVER_API) return;
    const CUpti_CallbackData *data = raw;
    switch (id) {
    case CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2_ptsz: on_begin_capture(id, data); break;
    case CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture_ptsz: on_end_capture(data); break;
    case CUPTI_DRIVER_TRACE_CBID_cuGraphCreate: on_graph_create(data); break;
    case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiate:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiate_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithFlags:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams_ptsz: on_instantiate(data); break;
    case CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize:
    case CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize: on_sync(id, data); break;
    case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz: on_graph_launch(data); break;
    default:
        if (is_copy(id)) on_copy(id, data);
        else on_stream_op(id, data);
        break;
    }
}

/* -- GPU times: graph launches, and kernels launched outside a graph ------------------------ */
static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records) {
    *buffer = aligned_alloc(8, ACTIVITY_BUFFER);
    *size = *buffer ? ACTIVITY_BUFFER : 0;
    *max_records = 0;
}

/* A graph launch's kernels arrive under the launch's correlation id, one after another
 * (perhaps across two buffers, perhaps with another stream's eager kernels among them): their
 * span is the launch's GPU time, written when a kernel of another launch comes, or at exit.
 * KERNEL_RECORD is the newest CUpti_ActivityKernelN of the headers built against (the build
 * names it). */
typedef struct { uint32_t correlation, graph, stream; uint64_t start, end; int open; } Launch;
static Launch launch;

/* Which graph exec each launch ran, by the launch call's correlation id, which its kernels'
 * records carry: filled by the cuGraphLaunch callback (a store, no output), read when the
 * records arrive. A slot is reused after LAUNCH_SLOTS launches; records arrive long before. */
#define LAUNCH_SLOTS 65536
static struct { uint32_t correlation; uint64_t exec; } launched[LAUNCH_SLOTS];

static void on_graph_launch(const CUpti_CallbackData *data) {
    if (data->callbackSite != CUPTI_API_ENTER) return;
    uint32_t slot = data->correlationId % LAUNCH_SLOTS;
    launched[slot].correlation = data->correlationId;
    launched[slot].exec = (uint64_t)(uintptr_t)*(CUgraphExec *)data->functionParams;
}

static uint64_t exec_of(uint32_t correlation) {
    uint32_t slot = correlation % LAUNCH_SLOTS;
    return launched[slot].correlation == correlation ? launched[slot].exec : 0;
}

static void launch_done(void) {
    if (!launch.open) return;
    Line line = begin_line("launch", (int64_t)launch.start - cupti_offset);
    put(&line, ",\"dur\":%lld,\"graph_id\":%u,\"exec\":%llu,\"stream\":%u",
        (long long)(launch.end - launch.start), launch.graph,
        (unsigned long long)exec_of(launch.correlation), launch.stream);
    end_line(&line);
    launch.open = 0;
}

static void emit_kernel(const KERNEL_RECORD *kernel) {
    if (kernel->graphId) {  /* a node of a graph's launch */
        if (launch.open && launch.correlation == kernel->correlationId) {
            if (kernel->start < launch.start) launch.start = kernel->start;
            if (kernel->end > launch.end) launch.end = kernel->end;
            return;
        }
        launch_done();
        launch = (Launch){kernel->correlationId, kernel->graphId, kernel->streamId,
                          kernel->start, kernel->end, 1};
        return;
    }
    Line line = begin_line("kernel", (int64_t)kernel->start - cupti_offset);  /* eager */
    put(&line, ",\"dur\":%lld,\"stream\":%u,\"name\":",
        (long long)(kernel->end - kernel->start), kernel->streamId);
    put_string(&line, kernel->name);
    end_line(&line);
}

static void CUPTIAPI buffer_completed(CUcontext context, uint32_t stream, uint8_t *buffer,
                                      size_t size, size_t valid) {
    (void)context; (void)stream; (void)size;
    CUpti_Activity *record = NULL;
    while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS)
        if (record->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)
            emit_kernel((const KERNEL_RECORD *)record);
    free(buffer);  /* a launch's kernels may go on in the next buffer: it stays open */
}

static void at_exit(void) {
    cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    launch_done();  /* the last launch: no kernel of another follows it */
    Line line = begin_line("exit", now_ns());
    end_line(&line);
}

/* -- set-up ---------------------------------------------------------------------------------- */
static void find_driver_calls(void) {
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!cuda) return;
    graph_get_nodes = dlsym(cuda, "cuGraphGetNodes");
    graph_get_edges = dlsym(cuda, "cuGraphGetEdges_v2");
    graph_get_edges_old = dlsym(cuda, "cuGraphGetEdges");
    node_get_type = dlsym(cuda, "cuGraphNodeGetType");
    kernel_node_params = dlsym(cuda, "cuGraphKernelNodeGetParams_v2");
    func_get_name = dlsym(cuda, "cuFuncGetName");
    kernel_get_name = dlsym(cuda, "cuKernelGetName");
}

static void say(const char *what, CUptiResult result) {
    const char *text = "?";
    cuptiGetResultString(result, &text);
    Line line = begin_line("note", now_ns());
    put(&line, ",\"what\":");
    put_string(&line, what);
    put(&line, ",\"why\":");
    put_string(&line, text);
    end_line(&line);
}

static const CUpti_CallbackId SUBSCRIBED[] = {
    CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture, CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2,
    CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture, CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuGraphCreate, CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiate,
    CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiate_v2,
    CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithFlags,
    CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams,
    CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize, CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize, CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize_v2,
    CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize,
    CUPTI_DRIVER_TRACE_CBID_cuEventRecord, CUPTI_DRIVER_TRACE_CBID_cuEventRecord_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuEventRecordWithFlags,
    CUPTI_DRIVER_TRACE_CBID_cuEventRecordWithFlags_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent, CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz,
};

int InitializeInjection(void) {
    const char *fd = getenv("GRAPHDOCTOR_NATIVE_FD");
    out_fd = fd ? atoi(fd) : -1;
    if (out_fd < 0) return 1;  /* not started by graphdoctor: stay out of the way */
    uint64_t cupti_now = 0;
    cuptiGetTimestamp(&cupti_now);
    cupti_offset = (int64_t)cupti_now - now_ns();
    find_driver_calls();
    Line hello = begin_line("hello", now_ns());
    put(&hello, ",\"pid\":%d,\"cupti_offset\":%lld", (int)getpid(), (long long)cupti_offset);
    end_line(&hello);
    CUptiResult result = cuptiSubscribe(&subscriber, (CUpti_CallbackFunc)on_call, NULL);
    if (result != CUPTI_SUCCESS) { say("subscribe", result); return 1; }
    for (size_t i = 0; i < sizeof SUBSCRIBED / sizeof *SUBSCRIBED; i++)
        cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API, SUBSCRIBED[i]);
    for (size_t i = 0; i < sizeof COPIES / sizeof *COPIES; i++)
        cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API, COPIES[i]);
    cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
    if ((result = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)) != CUPTI_SUCCESS)
        say("kernels", result);
    atexit(at_exit);
    return 1;
}
