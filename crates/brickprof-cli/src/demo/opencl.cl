// The demo transformer's kernels in OpenCL C: the same arithmetic as model.rs, one kernel per
// brick. Row-major matrices; the KV cache is [layer][position][hidden].

// A batch is `t` tokens (one for a decode step, a prompt's chunk for a prefill), one row of
// activations each; the token of row r sits at position min(pos + r, last).

// x[r] = embed[tokens[first + r]], one work item per element of the t rows.
__kernel void embedding(__global float* x, __global const float* embed,
                        __global const int* tokens, int first, int vocab, int h) {
    int i = get_global_id(0);
    int r = i / h;
    int tok = tokens[first + r] % vocab;
    x[i] = embed[tok * h + i % h];
}

// One work-group of a power-of-two size per row (from row `first`): out = x / rms(x) * w.
__kernel void rms_norm(__global float* out, __global const float* x, __global const float* w,
                       int n, __local float* scratch, int first) {
    int lid = get_local_id(0);
    int ls = get_local_size(0);
    size_t base = (size_t)(first + get_group_id(0)) * n;
    float s = 0.0f;
    for (int i = lid; i < n; i += ls) s += x[base + i] * x[base + i];
    scratch[lid] = s;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int off = ls / 2; off > 0; off >>= 1) {
        if (lid < off) scratch[lid] += scratch[lid + off];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    float inv = 1.0f / sqrt(scratch[0] / (float)n + 1e-5f);
    for (int i = lid; i < n; i += ls) out[i + (size_t)get_group_id(0) * n] = x[base + i] * inv * w[i];
}

// out[r][o] = dot(w[o, :], x[r]) for n outputs of k inputs, one work item per output: a
// matrix-vector product for one token, matrix-matrix for several.
__kernel void matmul(__global float* out, __global const float* w, __global const float* x,
                     int k, int n) {
    int g = get_global_id(0);
    int r = g / n, o = g % n;
    __global const float* row = w + (size_t)o * k;
    __global const float* xr = x + (size_t)r * k;
    float acc = 0.0f;
    for (int j = 0; j < k; ++j) acc += row[j] * xr[j];
    out[g] = acc;
}

// Rotate one (even, odd) pair of q and of k of one row per work item, then store that row's k
// and v in the cache at its position.
__kernel void rope(__global float* qkv, __global float* k_cache, __global float* v_cache,
                   int h, int hd, int pos, int last, int cache) {
    int g = get_global_id(0);
    int r = g / (h / 2);
    int p = g % (h / 2);  // pair index in [0, h / 2)
    int at = min(pos + r, last);
    __global float* row = qkv + (size_t)r * 3 * h;
    int half_hd = hd / 2;
    int i = p % half_hd;
    int e = 2 * p;  // element index of the pair's first value (head * hd + 2i)
    float theta = (float)at / pow(10000.0f, 2.0f * (float)i / (float)hd);
    float c;
    float s = sincos(theta, &c);
    float a = row[e], b = row[e + 1];
    row[e] = a * c - b * s;
    row[e + 1] = a * s + b * c;
    a = row[h + e];
    b = row[h + e + 1];
    float k0 = a * c - b * s, k1 = a * s + b * c;
    row[h + e] = k0;
    row[h + e + 1] = k1;
    int base = cache + at * h;
    k_cache[base + e] = k0;
    k_cache[base + e + 1] = k1;
    v_cache[base + e] = row[2 * h + e];
    v_cache[base + e + 1] = row[2 * h + e + 1];
}

// Positions row r attends (causal), and where its scores start: after those of the rows before
// it, head by head ([row][head][position]).
int attended(int pos, int r, int last) { return min(pos + r, last) + 1; }
size_t scores_at(int pos, int r, int heads) {
    // sum over j < r of (pos + j + 1): positions never clamp within a batch of several rows.
    return (size_t)heads * ((size_t)r * (pos + 1) + (size_t)r * (r - 1) / 2);
}

// scores[r][head][s] = dot(q[r]_head, k[s]_head) * scale for s < attended(r), one work item
// per (row, position up to `ctx`, head); the rest return.
__kernel void attention_scores(__global float* scores, __global const float* qkv,
                               __global const float* k_cache, int cache, int h, int hd,
                               int pos, int last, int ctx, float scale) {
    int g = get_global_id(0);
    int heads = h / hd;
    int head = g % heads;
    int s = (g / heads) % ctx;
    int r = g / heads / ctx;
    int seq = attended(pos, r, last);
    if (s >= seq) return;
    __global const float* q = qkv + (size_t)r * 3 * h + head * hd;
    __global const float* k = k_cache + cache + s * h + head * hd;
    float acc = 0.0f;
    for (int j = 0; j < hd; ++j) acc += q[j] * k[j];
    scores[scores_at(pos, r, heads) + head * seq + s] = acc * scale;
}

// Softmax of each (row, head)'s scores, one work item per (row, head).
__kernel void softmax_rows(__global float* scores, int heads, int pos, int last) {
    int g = get_global_id(0);
    int r = g / heads, head = g % heads;
    int seq = attended(pos, r, last);
    __global float* v = scores + scores_at(pos, r, heads) + head * seq;
    float m = -INFINITY;
    for (int t = 0; t < seq; ++t) m = fmax(m, v[t]);
    float sum = 0.0f;
    for (int t = 0; t < seq; ++t) {
        v[t] = exp(v[t] - m);
        sum += v[t];
    }
    for (int t = 0; t < seq; ++t) v[t] /= sum;
}

// att[r][head * hd + d] = sum_s p[r][head][s] * v[s][head * hd + d], one work item per output.
__kernel void attention_output(__global float* att, __global const float* scores,
                               __global const float* v_cache, int cache, int h, int hd,
                               int pos, int last) {
    int g = get_global_id(0);
    int r = g / h, i = g % h;
    int heads = h / hd, head = i / hd;
    int seq = attended(pos, r, last);
    __global const float* p = scores + scores_at(pos, r, heads) + head * seq;
    float acc = 0.0f;
    for (int s = 0; s < seq; ++s) acc += p[s] * v_cache[cache + s * h + i];
    att[g] = acc;
}

// x += y.
__kernel void add_into(__global float* x, __global const float* y) {
    int i = get_global_id(0);
    x[i] += y[i];
}

// gate = silu(gate) * up.
__kernel void swiglu(__global float* gate, __global const float* up) {
    int i = get_global_id(0);
    float g = gate[i];
    gate[i] = g / (1.0f + exp(-g)) * up[i];
}

// Greedy sampling: the first index of the largest logit (NaN never wins), as int and float.
__kernel void argmax(__global const float* logits, int n, __global int* next,
                     __global float* next_f) {
    int best = 0;
    for (int i = 1; i < n; ++i) {
        if (logits[i] > logits[best] || isnan(logits[best])) best = i;
    }
    next[0] = best;
    next_f[0] = (float)best;
}
