// llamaref: a small client of llama.cpp's libraries as the npm package
// node-llama-cpp ships them, for batchd's tests and benchmarks (package
// testing/llamacpp builds it). It reads one command a line on stdin and
// answers each with one line of JSON on stdout. Strings travel as hex.
//
// It is batchd's own code against llama.cpp's public API (llama.h,
// ggml-backend.h, and json_schema_to_grammar from libllama-common).

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "ggml-backend.h"
#include "json-schema-to-grammar.h"
#include "json.h"
#include "llama.h"

namespace {

llama_model * model = nullptr;
llama_context * ctx = nullptr;
int n_seq = 1;

std::string unhex(const std::string & h) {
    std::string out;
    for (size_t i = 0; i + 1 < h.size(); i += 2) {
        out.push_back((char) std::stoi(h.substr(i, 2), nullptr, 16));
    }
    return out;
}

std::string quote(const std::string & s) {
    std::string out = "\"";
    for (unsigned char c : s) {
        switch (c) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\n': out += "\\n"; break;
            case '\r': out += "\\r"; break;
            case '\t': out += "\\t"; break;
            default:
                if (c < 0x20) {
                    char b[8];
                    snprintf(b, sizeof b, "\\u%04x", c);
                    out += b;
                } else {
                    out.push_back((char) c);
                }
        }
    }
    return out + "\"";
}

std::string num(double v) {
    if (!std::isfinite(v)) {
        return v > 0 ? "1e308" : "-1e308";
    }
    char b[64];
    snprintf(b, sizeof b, "%.9g", v);
    return b;
}

void reply(const std::string & body) {
    std::cout << body << "\n" << std::flush;
}

void fail(const std::string & why) { reply("{\"error\":" + quote(why) + "}"); }

double now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::vector<llama_token> read_tokens(std::istream & in) {
    int n = 0;
    in >> n;
    std::vector<llama_token> t(n);
    for (auto & x : t) {
        in >> x;
    }
    return t;
}

// decode runs tokens of seq from position pos; with all, every token
// gives an output, else only the last. It times the call.
bool decode(const std::vector<llama_token> & toks, int pos, int seq, bool all, double * secs) {
    const uint32_t n_batch = llama_n_batch(ctx);
    for (size_t start = 0; start < toks.size(); start += n_batch) {
        size_t n = std::min<size_t>(n_batch, toks.size() - start);
        llama_batch b = llama_batch_init((int32_t) n, 0, 1);
        for (size_t i = 0; i < n; i++) {
            b.token[i] = toks[start + i];
            b.pos[i] = pos + (int) (start + i);
            b.n_seq_id[i] = 1;
            b.seq_id[i][0] = seq;
            b.logits[i] = all || start + i == toks.size() - 1;
        }
        b.n_tokens = (int32_t) n;
        double t0 = now();
        int rc = llama_decode(ctx, b);
        llama_synchronize(ctx);
        if (secs) {
            *secs += now() - t0;
        }
        llama_batch_free(b);
        if (rc != 0) {
            return false;
        }
    }
    return true;
}

// top returns the k best tokens of a logits row with their log-probabilities.
std::string top(const float * logits, int n_vocab, int k) {
    double mx = -INFINITY;
    for (int i = 0; i < n_vocab; i++) {
        mx = std::max(mx, (double) logits[i]);
    }
    double sum = 0;
    for (int i = 0; i < n_vocab; i++) {
        sum += std::exp((double) logits[i] - mx);
    }
    double lse = mx + std::log(sum);
    std::vector<int> best;
    for (int i = 0; i < n_vocab; i++) {
        if ((int) best.size() < k || logits[i] > logits[best.back()]) {
            auto it = best.begin();
            while (it != best.end() && logits[*it] >= logits[i]) {
                ++it;
            }
            best.insert(it, i);
            if ((int) best.size() > k) {
                best.pop_back();
            }
        }
    }
    std::string out = "[";
    for (size_t i = 0; i < best.size(); i++) {
        out += (i ? ",[" : "[") + std::to_string(best[i]) + "," + num(logits[best[i]] - lse) + "]";
    }
    return out + "]";
}

void cmd_model(std::istream & in) {
    std::string path;
    int vocab_only = 0;
    in >> path >> vocab_only;
    if (ctx) {
        llama_free(ctx);
        ctx = nullptr;
    }
    if (model) {
        llama_model_free(model);
    }
    llama_model_params mp = llama_model_default_params();
    mp.vocab_only = vocab_only != 0;
    mp.n_gpu_layers = 0;
    model = llama_model_load_from_file(unhex(path).c_str(), mp);
    if (!model) {
        return fail("the model did not load");
    }
    const llama_vocab * v = llama_model_get_vocab(model);
    char desc[256];
    llama_model_desc(model, desc, sizeof desc);
    reply("{\"n_vocab\":" + std::to_string(llama_vocab_n_tokens(v)) + ",\"desc\":" + quote(desc) + "}");
}

// eog lists the vocabulary's end-of-generation tokens and its control
// tokens.
void cmd_eog(std::istream &) {
    const llama_vocab * v = llama_model_get_vocab(model);
    std::string eog = "[", ctl = "[";
    for (int i = 0; i < llama_vocab_n_tokens(v); i++) {
        if (llama_vocab_is_eog(v, i)) {
            eog += (eog.size() > 1 ? "," : "") + std::to_string(i);
        }
        if (llama_vocab_is_control(v, i)) {
            ctl += (ctl.size() > 1 ? "," : "") + std::to_string(i);
        }
    }
    reply("{\"eog\":" + eog + "],\"control\":" + ctl + "]}");
}

void cmd_context(std::istream & in) {
    int n_ctx, n_batch, seqs, tk, tv, flash, threads, emb, pooling, unified;
    in >> n_ctx >> n_batch >> seqs >> tk >> tv >> flash >> threads >> emb >> pooling >> unified;
    if (!model) {
        return fail("no model");
    }
    if (ctx) {
        llama_free(ctx);
    }
    llama_context_params cp = llama_context_default_params();
    cp.n_ctx = n_ctx;
    cp.n_batch = n_batch;
    cp.n_ubatch = n_batch;
    cp.n_seq_max = seqs;
    cp.type_k = (ggml_type) tk;
    cp.type_v = (ggml_type) tv;
    cp.flash_attn_type = (llama_flash_attn_type) flash;
    cp.n_threads = threads;
    cp.n_threads_batch = threads;
    cp.embeddings = emb != 0;
    cp.pooling_type = static_cast<enum llama_pooling_type>(pooling);
    cp.kv_unified = unified != 0;
    cp.no_perf = false;
    ctx = llama_init_from_model(model, cp);
    if (!ctx) {
        return fail("the context was not made");
    }
    n_seq = seqs;
    reply("{\"n_ctx\":" + std::to_string(llama_n_ctx(ctx)) + "}");
}

std::vector<llama_token> tokenize(const std::string & text, bool add, bool parse) {
    const llama_vocab * v = llama_model_get_vocab(model);
    std::vector<llama_token> t(text.size() + 16);
    int n = llama_tokenize(v, text.data(), (int32_t) text.size(), t.data(), (int32_t) t.size(), add, parse);
    if (n < 0) {
        t.resize(-n);
        n = llama_tokenize(v, text.data(), (int32_t) text.size(), t.data(), (int32_t) t.size(), add, parse);
    }
    t.resize(std::max(n, 0));
    return t;
}

void cmd_tokenize(std::istream & in) {
    int add, parse;
    std::string text;
    in >> add >> parse >> text;
    auto t = tokenize(unhex(text), add != 0, parse != 0);
    std::string out = "{\"ids\":[";
    for (size_t i = 0; i < t.size(); i++) {
        out += (i ? "," : "") + std::to_string(t[i]);
    }
    reply(out + "]}");
}

// generate runs a prompt on seq and samples n tokens with smpl (greedy,
// or a grammar then greedy), recording each step's top k.
void generate(std::istream & in, llama_sampler * smpl) {
    int seq, n, k, ignore_eos;
    in >> seq >> n >> k >> ignore_eos;
    auto prompt = read_tokens(in);
    if (!ctx || prompt.empty()) {
        return fail("no context, or an empty prompt");
    }
    llama_memory_seq_rm(llama_get_memory(ctx), seq, -1, -1);
    const llama_vocab * v = llama_model_get_vocab(model);
    std::string toks = "[", tops = "[";
    int pos = (int) prompt.size();
    if (!decode(prompt, 0, seq, false, nullptr)) {
        return fail("decode failed");
    }
    double t0 = now();
    for (int i = 0; i < n; i++) {
        const float * row = llama_get_logits_ith(ctx, -1);
        std::string t = top(row, llama_vocab_n_tokens(v), k);
        llama_token tok = llama_sampler_sample(smpl, ctx, -1); // it accepts the token too
        toks += (i ? "," : "") + std::to_string(tok);
        tops += (i ? "," : "") + t;
        if (!ignore_eos && llama_vocab_is_eog(v, tok)) {
            break;
        }
        if (!decode({tok}, pos++, seq, false, nullptr)) {
            return fail("decode failed");
        }
    }
    reply("{\"tokens\":" + toks + "],\"top\":" + tops + "],\"gen_s\":" + num(now() - t0) + "}");
}

void cmd_greedy(std::istream & in) {
    llama_sampler * s = llama_sampler_init_greedy();
    generate(in, s);
    llama_sampler_free(s);
}

void cmd_grammar(std::istream & in) {
    std::string gbnf;
    in >> gbnf;
    llama_sampler * chain = llama_sampler_chain_init(llama_sampler_chain_default_params());
    llama_sampler * g = llama_sampler_init_grammar(llama_model_get_vocab(model), unhex(gbnf).c_str(), "root");
    if (!g) {
        llama_sampler_free(chain);
        std::string rest;
        std::getline(in, rest);
        return fail("the grammar did not parse");
    }
    llama_sampler_chain_add(chain, g);
    llama_sampler_chain_add(chain, llama_sampler_init_greedy());
    generate(in, chain);
    llama_sampler_free(chain);
}

void cmd_schema(std::istream & in) {
    std::string s;
    in >> s;
    try {
        reply("{\"gbnf\":" + quote(json_schema_to_grammar(common_json::parse(unhex(s)))) + "}");
    } catch (const std::exception & e) {
        fail(e.what());
    }
}

void cmd_embed(std::istream & in) {
    auto toks = read_tokens(in);
    llama_memory_clear(llama_get_memory(ctx), true);
    if (!decode(toks, 0, 0, true, nullptr)) {
        return fail("decode failed");
    }
    const float * e = llama_get_embeddings_seq(ctx, 0);
    if (!e) {
        return fail("no pooled embedding (pooling none?)");
    }
    // Rank pooling gives the head's scores, one per classifier output.
    int n = llama_pooling_type(ctx) == LLAMA_POOLING_TYPE_RANK ? (int) llama_model_n_cls_out(model) : llama_model_n_embd(model);
    std::string out = "{\"embedding\":[";
    for (int i = 0; i < n; i++) {
        out += (i ? "," : "") + num(e[i]);
    }
    reply(out + "]}");
}

// rerank_tokens: a query and a document paired as llama-server's rerank
// route pairs them (its format_prompt_rerank, which lives in the server,
// not the library): the file's rerank template with {query} and
// {document} replaced, tokenized without added specials and with special
// tokens parsed; else [BOS] query [EOS] [SEP] doc [EOS] as the
// vocabulary's add flags say, SEP standing in for a missing EOS.
void cmd_rerank_tokens(std::istream & in) {
    std::string q, d;
    in >> q >> d;
    q = unhex(q);
    d = unhex(d);
    const llama_vocab * v = llama_model_get_vocab(model);
    std::vector<llama_token> out;
    const char * tmpl = llama_model_chat_template(model, "rerank");
    if (tmpl) {
        std::string p = tmpl;
        for (auto [key, val] : {std::pair<std::string, std::string>{"{query}", q}, {"{document}", d}}) {
            for (size_t at = 0; (at = p.find(key, at)) != std::string::npos; at += val.size()) {
                p.replace(at, key.size(), val);
            }
        }
        out = tokenize(p, false, true);
    } else {
        auto qt = tokenize(q, false, false), dt = tokenize(d, false, false);
        llama_token eos = llama_vocab_eos(v);
        if (eos == LLAMA_TOKEN_NULL) {
            eos = llama_vocab_sep(v);
        }
        if (llama_vocab_get_add_bos(v)) out.push_back(llama_vocab_bos(v));
        out.insert(out.end(), qt.begin(), qt.end());
        if (llama_vocab_get_add_eos(v)) out.push_back(eos);
        if (llama_vocab_get_add_sep(v)) out.push_back(llama_vocab_sep(v));
        out.insert(out.end(), dt.begin(), dt.end());
        if (llama_vocab_get_add_eos(v)) out.push_back(eos);
    }
    std::string r = "{\"ids\":[";
    for (size_t i = 0; i < out.size(); i++) {
        r += (i ? "," : "") + std::to_string(out[i]);
    }
    reply(r + "]}");
}

// embed_many: k sequences' tokens in one batch (as llama-server's slots
// embed together), their pooled embeddings read; times the decode.
void cmd_embed_many(std::istream & in) {
    int k;
    in >> k;
    std::vector<std::vector<llama_token>> seqs(k);
    size_t total = 0;
    for (auto & s : seqs) {
        s = read_tokens(in);
        total += s.size();
    }
    llama_memory_clear(llama_get_memory(ctx), true);
    llama_batch b = llama_batch_init((int32_t) total, 0, 1);
    int n = 0;
    for (int s = 0; s < k; s++) {
        for (size_t i = 0; i < seqs[s].size(); i++, n++) {
            b.token[n] = seqs[s][i];
            b.pos[n] = (int) i;
            b.n_seq_id[n] = 1;
            b.seq_id[n][0] = s;
            b.logits[n] = true;
        }
    }
    b.n_tokens = n;
    double t0 = now();
    int rc = llama_decode(ctx, b);
    llama_synchronize(ctx);
    double secs = now() - t0;
    llama_batch_free(b);
    if (rc != 0) {
        return fail("decode failed");
    }
    for (int s = 0; s < k; s++) {
        if (!llama_get_embeddings_seq(ctx, s)) {
            return fail("no pooled embedding");
        }
    }
    reply("{\"s\":" + num(secs) + "}");
}

// bench_pp: prefill n tokens (a fresh cache each time), reps times.
void cmd_bench_pp(std::istream & in) {
    int n, reps;
    in >> n >> reps;
    const llama_vocab * v = llama_model_get_vocab(model);
    std::vector<llama_token> toks(n);
    for (int i = 0; i < n; i++) {
        toks[i] = (i * 7919 + 13) % llama_vocab_n_tokens(v);
    }
    std::string out = "{\"s\":[";
    for (int r = 0; r < reps; r++) {
        llama_memory_clear(llama_get_memory(ctx), true);
        double s = 0;
        if (!decode(toks, 0, 0, false, &s)) {
            return fail("decode failed");
        }
        out += (r ? "," : "") + num(s);
    }
    reply(out + "]}");
}

// bench_gen: nseq sequences of a prompt each, then steps of one token per
// sequence in one batch; times inside llama_decode and end to end.
void cmd_bench_gen(std::istream & in) {
    int nseq, prompt, steps;
    in >> nseq >> prompt >> steps;
    if (nseq > n_seq) {
        return fail("more sequences than the context holds");
    }
    const llama_vocab * v = llama_model_get_vocab(model);
    int nv = llama_vocab_n_tokens(v);
    llama_memory_clear(llama_get_memory(ctx), true);
    double pre = 0;
    for (int s = 0; s < nseq; s++) {
        std::vector<llama_token> toks(prompt);
        for (int i = 0; i < prompt; i++) {
            toks[i] = (i * 7919 + s * 104729 + 13) % nv;
        }
        if (!decode(toks, 0, s, false, &pre)) {
            return fail("decode failed");
        }
    }
    llama_batch b = llama_batch_init(nseq, 0, 1);
    double inside = 0, t0 = now();
    for (int step = 0; step < steps; step++) {
        for (int s = 0; s < nseq; s++) {
            b.token[s] = (step * 31 + s * 17 + 5) % nv;
            b.pos[s] = prompt + step;
            b.n_seq_id[s] = 1;
            b.seq_id[s][0] = s;
            b.logits[s] = true;
        }
        b.n_tokens = nseq;
        double d0 = now();
        int rc = llama_decode(ctx, b);
        llama_synchronize(ctx);
        inside += now() - d0;
        if (rc != 0) {
            llama_batch_free(b);
            return fail("decode failed");
        }
        for (int s = 0; s < nseq; s++) {
            volatile float x = llama_get_logits_ith(ctx, s)[0]; // read, as a sampler would
            (void) x;
        }
    }
    double total = now() - t0;
    llama_batch_free(b);
    reply("{\"prefill_s\":" + num(pre) + ",\"decode_s\":" + num(inside) + ",\"total_s\":" + num(total) +
          ",\"tokens\":" + std::to_string(nseq * steps) + "}");
}

void cmd_quantize(std::istream & in) {
    std::string src, dst;
    int ftype, threads, requantize;
    in >> src >> dst >> ftype >> threads >> requantize;
    llama_model_quantize_params p = llama_model_quantize_default_params();
    p.ftype = (llama_ftype) ftype;
    p.nthread = threads;
    p.allow_requantize = requantize != 0;
    if (llama_model_quantize(unhex(src).c_str(), unhex(dst).c_str(), &p) != 0) {
        return fail("quantize failed");
    }
    reply("{}");
}

void dispatch(const std::string & op, std::istream & in) {
    if (op == "model") cmd_model(in);
    else if (op == "context") cmd_context(in);
    else if (op == "tokenize") cmd_tokenize(in);
    else if (op == "eog") cmd_eog(in);
    else if (op == "greedy") cmd_greedy(in);
    else if (op == "grammar") cmd_grammar(in);
    else if (op == "schema") cmd_schema(in);
    else if (op == "embed") cmd_embed(in);
    else if (op == "embed_many") cmd_embed_many(in);
    else if (op == "rerank_tokens") cmd_rerank_tokens(in);
    else if (op == "bench_pp") cmd_bench_pp(in);
    else if (op == "bench_gen") cmd_bench_gen(in);
    else if (op == "quantize") cmd_quantize(in);
    else fail("unknown command " + op);
}

}  // namespace

int main(int argc, char ** argv) {
    // argv[1]: the directory of the ggml backends; argv[2] (optional): one
    // CPU variant's library to load instead of the best the CPU allows.
    llama_log_set([](ggml_log_level, const char *, void *) {}, nullptr);
    if (argc > 2 && argv[2][0]) {
        if (!ggml_backend_load(argv[2])) {
            fprintf(stderr, "cannot load %s\n", argv[2]);
            return 1;
        }
    } else if (argc > 1) {
        ggml_backend_load_all_from_path(argv[1]);
    }
    llama_backend_init();
    reply(std::string("{\"ready\":true,\"system\":") + quote(llama_print_system_info()) + "}");
    std::string line;
    while (std::getline(std::cin, line)) {
        std::istringstream in(line);
        std::string op;
        in >> op;
        try {
            dispatch(op, in);
        } catch (const std::exception & e) {
            fail(std::string("exception: ") + e.what());
        }
    }
    if (ctx) llama_free(ctx);
    if (model) llama_model_free(model);
    return 0;
}
