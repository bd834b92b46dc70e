// The demo transformer's kernels in OpenCL C: the same arithmetic as model.rs, one kernel per
// brick. Row-major matrices; the KV cache is [layer][position][hidden].

// x = embed[token]; token < 0: the token the previous pass sampled (next[0]).
__kernel void embedding(__global float* x, __global const float* embed,
                        __global const int* next, int token, int vocab, int h) {
    int i = get_global_id(0);
    int t = token >= 0 ? token : next[0];
    t = t % vocab;
    x[i] = embed[t * h + i];
}

// One work-group of a power-of-two size: out = x / rms(x) * w.
__kernel void rms_norm(__global float* out, __global const float* x, __global const float* w,
                       int n, __local float* scratch) {
    int lid = get_local_id(0);
    int ls = get_local_size(0);
    float s = 0.0f;
    for (int i = lid; i < n; i += ls) s += x[i] * x[i];
    scratch[lid] = s;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int off = ls / 2; off > 0; off >>= 1) {
        if (lid < off) scratch[lid] += scratch[lid + off];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    float inv = 1.0f / sqrt(scratch[0] / (float)n + 1e-5f);
    for (int i = lid; i < n; i += ls) out[i] = x[i] * inv * w[i];
}

// out[r] = dot(w[r, :], x), one work item per row.
__kernel void matvec(__global float* out, __global const float* w, __global const float* x,
                     int k) {
    int r = get_global_id(0);
    __global const float* row = w + (size_t)r * k;
    float acc = 0.0f;
    for (int j = 0; j < k; ++j) acc += row[j] * x[j];
    out[r] = acc;
}

// Rotate one (even, odd) pair of q and of k per work item, then store k and v in the cache.
__kernel void rope(__global float* qkv, __global float* k_cache, __global float* v_cache,
                   int h, int hd, int pos, int cache_base) {
    int p = get_global_id(0);  // pair index in [0, h / 2)
    int half_hd = hd / 2;
    int i = p % half_hd;
    int e = 2 * p;  // element index of the pair's first value (head * hd + 2i)
    float theta = (float)pos / pow(10000.0f, 2.0f * (float)i / (float)hd);
    float c;
    float s = sincos(theta, &c);
    float a = qkv[e], b = qkv[e + 1];
    qkv[e] = a * c - b * s;
    qkv[e + 1] = a * s + b * c;
    a = qkv[h + e];
    b = qkv[h + e + 1];
    float k0 = a * c - b * s, k1 = a * s + b * c;
    qkv[h + e] = k0;
    qkv[h + e + 1] = k1;
    k_cache[cache_base + e] = k0;
    k_cache[cache_base + e + 1] = k1;
    v_cache[cache_base + e] = qkv[2 * h + e];
    v_cache[cache_base + e + 1] = qkv[2 * h + e + 1];
}

// scores[head, t] = dot(q_head, k[t]_head) * scale, one work item per (head, t).
__kernel void attention_scores(__global float* scores, __global const float* qkv,
                               __global const float* k_cache, int cache, int h, int hd, int seq,
                               float scale) {
    int g = get_global_id(0);
    int head = g / seq, t = g % seq;
    __global const float* q = qkv + head * hd;
    __global const float* k = k_cache + cache + t * h + head * hd;
    float acc = 0.0f;
    for (int j = 0; j < hd; ++j) acc += q[j] * k[j];
    scores[head * seq + t] = acc * scale;
}

// Softmax of each head's row of scores, one work item per head.
__kernel void softmax_rows(__global float* scores, int seq) {
    __global float* v = scores + get_global_id(0) * seq;
    float m = -INFINITY;
    for (int t = 0; t < seq; ++t) m = fmax(m, v[t]);
    float sum = 0.0f;
    for (int t = 0; t < seq; ++t) {
        v[t] = exp(v[t] - m);
        sum += v[t];
    }
    for (int t = 0; t < seq; ++t) v[t] /= sum;
}

// att[head * hd + d] = sum_t p[head, t] * v[t][head * hd + d], one work item per output.
__kernel void attention_output(__global float* att, __global const float* scores,
                               __global const float* v_cache, int cache, int h, int hd,
                               int seq) {
    int i = get_global_id(0);
    int head = i / hd;
    float acc = 0.0f;
    for (int t = 0; t < seq; ++t) acc += scores[head * seq + t] * v_cache[cache + t * h + i];
    att[i] = acc;
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
