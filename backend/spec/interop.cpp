// Hugging Face config.json import and Megatron-LM argument export.
#include "spec/interop.hpp"

#include <algorithm>
#include <cctype>
#include <limits>
#include <sstream>

namespace tessera::spec {

using nlohmann::json;

namespace {

const json* first_of(const json& config, std::initializer_list<const char*> keys, std::string* found = nullptr) {
  for (const char* key : keys)
    if (config.contains(key) && !config[key].is_null()) {
      if (found) *found = key;
      return &config[key];
    }
  return nullptr;
}

int64_t required_int(const json& config, std::initializer_list<const char*> keys, const std::string& source,
                     std::string* found = nullptr) {
  std::string name;
  const json* v = first_of(config, keys, &name);
  if (found) *found = name;
  if (!v) throw SpecError({{"", source + ": config field " + std::string(*keys.begin()) + " is missing"}});
  if (!v->is_number_integer())
    throw SpecError({{"", source + ": config field " + name + " must be an integer, got " + v->dump()}});
  // One past int64 is parsed unsigned: its int64 reading is negative.
  if (v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
    throw SpecError({{"", source + ": config field " + name + "=" + v->dump() + " must be at most " +
                              std::to_string(std::numeric_limits<int64_t>::max())}});
  // Every one is a count (layers, widths, heads, vocabulary, positions, experts): 0 would read as "derive".
  if (v->get<int64_t>() <= 0)
    throw SpecError({{"", source + ": config field " + name + "=" + v->dump() + " must be a positive integer"}});
  return v->get<int64_t>();
}

// An optional field of a type of its own (json::value would throw a type_error naming no field).
template <typename T>
T optional_field(const json& config, const char* key, T fallback, const char* type, const std::string& source) {
  if (!config.contains(key) || config[key].is_null()) return fallback;
  const json& v = config[key];
  if constexpr (std::is_same_v<T, bool>) {
    if (!v.is_boolean()) throw SpecError({{"", source + ": config field " + key + " must be " + type}});
  } else {
    if (!v.is_string()) throw SpecError({{"", source + ": config field " + key + " must be " + type}});
  }
  return v.get<T>();
}

}  // namespace

json spec_from_hf_config(const json& config, const std::string& source, std::vector<std::string>* notes,
                         std::map<std::string, std::string>* config_fields) {
  if (!config.is_object()) throw SpecError({{"", source + ": a config.json must be a JSON object"}});
  if (!config.contains("model_type"))
    throw SpecError({{"", source + ": model_type is missing (a Hugging Face config.json names its architecture there: "
                                   "llama, mistral, mixtral or gpt2)"}});
  const std::string type = optional_field<std::string>(config, "model_type", "", "a string", source);
  json model;
  std::map<std::string, std::string> origin;  // spec field -> the config field it came from
  const auto count = [&](const char* field, std::initializer_list<const char*> keys) {
    std::string found;
    model[field] = required_int(config, keys, source, &found);
    origin[std::string("model.") + field] = found;
  };
  if (type == "llama" || type == "mistral" || type == "mixtral") {
    model["arch"] = type == "mixtral" ? "mixtral" : "llama";
    count("num_layers", {"num_hidden_layers"});
    count("hidden_size", {"hidden_size"});
    count("num_attention_heads", {"num_attention_heads"});
    // Absent or null (as Hugging Face's LlamaConfig reads it): one key-value head per attention head.
    if (first_of(config, {"num_key_value_heads"}))
      count("num_query_groups", {"num_key_value_heads"});
    else
      model["num_query_groups"] = model["num_attention_heads"];
    count("ffn_hidden_size", {"intermediate_size"});
    count("vocab_size", {"vocab_size"});
    count("seq_length", {"max_position_embeddings"});
    model["normalization"] = "rmsnorm";
    model["activation"] = "swiglu";
    model["position_embedding"] = "rope";
    model["tie_embeddings"] = optional_field(config, "tie_word_embeddings", false, "true or false", source);
    // head_dim, where given, must be what the heads split the hidden size into. One that is no
    // integer ("128", 64.5) is refused rather than skipped, and a product past int64 does not wrap.
    if (first_of(config, {"head_dim"})) {
      const int64_t head_dim = required_int(config, {"head_dim"}, source);
      int64_t width = 0;
      if (__builtin_mul_overflow(head_dim, model["num_attention_heads"].get<int64_t>(), &width) ||
          width != model["hidden_size"].get<int64_t>())
        throw SpecError({{"", source + ": head_dim=" + config["head_dim"].dump() + " × num_attention_heads=" +
                                  model["num_attention_heads"].dump() + " != hidden_size=" + model["hidden_size"].dump() +
                                  " is not supported (the heads here split the hidden size)"}});
    }
    // The llama architecture here has no linear biases (Megatron's --disable-bias-linear); a config
    // with them would be counted and exported as another model.
    for (const char* bias : {"attention_bias", "mlp_bias"})
      if (optional_field(config, bias, false, "true or false", source))
        throw SpecError({{"", source + ": " + bias + "=true is not supported (the " + type +
                                  " architecture here has no biases in its linear layers)"}});
    // The llama architecture here gates its MLP with SiLU (SwiGLU; "swish" in older configs).
    if (const auto act = optional_field<std::string>(config, "hidden_act", "silu", "a string", source);
        act != "silu" && act != "swish")
      throw SpecError({{"", source + ": hidden_act=\"" + act + "\" is not supported (the " + type +
                                " architecture here is SwiGLU, gated with silu)"}});
    // Attention is planned over the whole sequence: a shorter sliding window (Mistral 7B v0.1's 4096
    // of 32768) is planned as that sequence, which costs what the window does.
    // null (Mistral v0.2 and later: no window) or a positive integer.
    // One past int64 is parsed unsigned: its int64 reading is negative.
    if (config.contains("sliding_window") && !config["sliding_window"].is_null() &&
        !(config["sliding_window"].is_number_integer() && config["sliding_window"].get<int64_t>() > 0 &&
          !(config["sliding_window"].is_number_unsigned() &&
            config["sliding_window"].get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))))
      throw SpecError({{"", source + ": config field sliding_window must be a positive integer of at most " +
                                std::to_string(std::numeric_limits<int64_t>::max()) + " or null, got " +
                                config["sliding_window"].dump()}});
    if (config.contains("sliding_window") && config["sliding_window"].is_number_integer() &&
        config["sliding_window"].get<int64_t>() < model["seq_length"].get<int64_t>()) {
      const int64_t window = config["sliding_window"].get<int64_t>();
      if (notes)
        notes->push_back("sliding_window=" + std::to_string(window) + " is shorter than max_position_embeddings=" +
                         std::to_string(model["seq_length"].get<int64_t>()) + ": seq_length set to " + std::to_string(window) +
                         " (attention is planned over the whole sequence; plan --seq sets another)");
      model["seq_length"] = window;
      origin["model.seq_length"] = "sliding_window";
    }
    if (type == "mixtral") {
      count("num_experts", {"num_local_experts"});
      count("moe_top_k", {"num_experts_per_tok"});
      model["moe_ffn_hidden_size"] = model["ffn_hidden_size"];
      origin["model.moe_ffn_hidden_size"] = origin["model.ffn_hidden_size"];
    }
  } else if (type == "gpt2") {
    model["arch"] = "gpt";
    count("num_layers", {"n_layer", "num_hidden_layers"});
    count("hidden_size", {"n_embd", "hidden_size"});
    count("num_attention_heads", {"n_head", "num_attention_heads"});
    const json* inner = first_of(config, {"n_inner"});
    if (inner)
      count("ffn_hidden_size", {"n_inner"});
    else
      model["ffn_hidden_size"] = 4 * model["hidden_size"].get<int64_t>();
    count("vocab_size", {"vocab_size"});
    count("seq_length", {"n_positions", "n_ctx", "max_position_embeddings"});
    model["normalization"] = "layernorm";
    // GPT-2's MLP: GELU ("gelu_new" in its configs, the tanh approximation); another activation would be
    // planned and exported as a GELU model.
    if (const auto act = optional_field<std::string>(config, "activation_function", "gelu_new", "a string", source);
        act.rfind("gelu", 0) != 0)
      throw SpecError({{"", source + ": activation_function=\"" + act + "\" is not supported (the gpt architecture here "
                                "uses GELU)"}});
    model["activation"] = "gelu";
    model["position_embedding"] = "learned";
    model["tie_embeddings"] = optional_field(config, "tie_word_embeddings", true, "true or false", source);
  } else {
    throw SpecError({{"", source + ": model_type \"" + type + "\" is not supported (llama, mistral, mixtral, gpt2)"}});
  }
  std::string name = source;
  if (config.contains("_name_or_path") && config["_name_or_path"].is_string()) name = config["_name_or_path"].get<std::string>();
  if (config_fields) *config_fields = std::move(origin);
  return json{{"name", name}, {"model", model}};
}

std::vector<FieldError> naming_config_fields(const std::vector<FieldError>& errors,
                                             const std::map<std::string, std::string>& config_fields, const std::string& source) {
  std::vector<FieldError> out;
  for (const auto& e : errors) {
    // The spec fields the rule names, in the order it names them, each once.
    std::vector<std::pair<size_t, std::string>> at_key;
    for (const auto& [field, key] : config_fields)
      if (const auto at = e.message.find(field); at != std::string::npos) {
        const auto end = at + field.size();
        const bool whole = end == e.message.size() || !(std::isalnum(static_cast<unsigned char>(e.message[end])) || e.message[end] == '_');
        if (whole) at_key.emplace_back(at, key);
      }
    std::sort(at_key.begin(), at_key.end());
    std::vector<std::string> named;
    for (const auto& [at, key] : at_key)
      if (std::find(named.begin(), named.end(), key) == named.end()) named.push_back(key);
    FieldError named_error = e;
    if (!named.empty()) {
      named_error.message += " (" + source + ": config field" + (named.size() > 1 ? "s " : " ");
      for (size_t i = 0; i < named.size(); ++i) named_error.message += (i ? ", " : "") + named[i];
      named_error.message += ")";
    }
    out.push_back(std::move(named_error));
  }
  return out;
}

MegatronExport megatron_command(const RunSpec& spec) {
  MegatronExport out;
  const auto& m = spec.model;
  const auto& p = spec.parallel;
  const auto& t = spec.training;
  std::ostringstream a;
  const char* script = m.arch == Arch::bert ? "pretrain_bert.py" : m.arch == Arch::t5 ? "pretrain_t5.py" : "pretrain_gpt.py";
  // Megatron-LM's T5 pipeline splits its stages between the encoder and the decoder
  // (--encoder-pipeline-model-parallel-size), which the planner does not model: one stage here may
  // hold layers of both.
  if (m.arch == Arch::t5 && p.pp > 1)
    throw SpecError({{"parallel.pp", "parallel.pp=" + std::to_string(p.pp) +
                                         ": Megatron-LM's T5 gives the encoder and the decoder pipeline stages of their own, "
                                         "which this export does not write; export t5 with parallel.pp=1"}});
  // NullTokenizer's vocabulary is --vocab-size ids and its end-of-document id: at least 2.
  if (m.vocab_size < 2)
    throw SpecError({{"model.vocab_size", "model.vocab_size=" + std::to_string(m.vocab_size) +
                                              ": Megatron-LM's NullTokenizer adds an end-of-document id to at least one "
                                              "token id, so its vocabulary is 2 or more"}});
  if (p.ep > 1 && t.precision == Precision::fp16)
    throw SpecError({{"training.precision", "Megatron-LM refuses expert parallelism in fp16 (parallel.ep=" + std::to_string(p.ep) +
                                                ", training.precision=fp16): use bf16 to export this layout"}});
  a << "torchrun --nnodes " << spec.cluster.nodes << " --nproc-per-node " << spec.cluster.gpus_per_node;
  // Across nodes each node's torchrun needs its rank and the rendezvous host: set these two there.
  if (spec.cluster.nodes > 1) a << " --node-rank $NODE_RANK --master-addr $MASTER_ADDR --master-port 6000";
  a << " " << script;
  auto arg = [&](const std::string& name, auto value) { a << " \\\n  --" << name << " " << value; };
  auto flag = [&](const std::string& name) { a << " \\\n  --" << name; };
  if (m.arch == Arch::t5) {
    arg("encoder-num-layers", m.encoder_layers);
    arg("decoder-num-layers", m.decoder_layers);
  } else {
    arg("num-layers", m.num_layers);
  }
  arg("hidden-size", m.hidden_size);
  arg("num-attention-heads", m.num_attention_heads);
  if (m.num_query_groups != m.num_attention_heads) {
    flag("group-query-attention");
    arg("num-query-groups", m.num_query_groups);
  }
  arg("ffn-hidden-size", m.ffn_hidden_size);
  if (m.arch == Arch::t5) {
    // pretrain_t5.py sizes its dataset by both.
    arg("encoder-seq-length", m.seq_length);
    arg("decoder-seq-length", m.output_seq_length());
  } else {
    arg("seq-length", m.seq_length);
  }
  arg("max-position-embeddings", std::max(m.seq_length, m.output_seq_length()));
  arg("tokenizer-type", "NullTokenizer");
  // NullTokenizer adds an end-of-document id after --vocab-size ids: one less gives the spec's vocabulary.
  arg("vocab-size", m.vocab_size - 1);
  if (m.arch == Arch::bert || m.arch == Arch::t5)
    out.notes.push_back(std::string(script) + "'s masked-language-model data needs a WordPiece vocabulary "
                        "(--tokenizer-type BertWordPieceLowerCase --vocab-file FILE, in place of NullTokenizer): "
                        "NullTokenizer has no [CLS], [SEP] or [MASK] ids");
  if (m.normalization == Normalization::rmsnorm) arg("normalization", "RMSNorm");
  if (m.activation == Activation::swiglu) flag("swiglu");
  if (m.position_embedding == PositionEmbedding::rope) arg("position-embedding-type", "rope");
  // T5's relative attention bias (Megatron Core's T5Model: 32 buckets, distance 128, its defaults).
  if (m.position_embedding == PositionEmbedding::relative) arg("position-embedding-type", "relative");
  if (m.arch == Arch::llama || m.arch == Arch::mixtral || m.arch == Arch::t5) flag("disable-bias-linear");
  // Llama and Mixtral train without dropout, and are planned so (no dropout masks in their
  // activations); Megatron-LM's defaults are 0.1.
  if (m.arch == Arch::llama || m.arch == Arch::mixtral) {
    arg("attention-dropout", "0.0");
    arg("hidden-dropout", "0.0");
  }
  if (m.position_embedding == PositionEmbedding::rope)
    out.notes.push_back("rotary base: the spec does not carry RoPE's theta; Megatron-LM's --rotary-base defaults to "
                        "10000 (Llama 3: add --rotary-base 500000; Mixtral: 1000000)");
  if (!m.tie_embeddings) flag("untie-embeddings-and-output-weights");
  if (m.is_moe()) {
    arg("num-experts", m.num_experts);
    arg("moe-router-topk", m.moe_top_k);
    arg("moe-ffn-hidden-size", m.moe_ffn_hidden_size);
  }
  // Megatron Core's TransformerConfig refuses expert and tensor parallelism without sequence parallelism.
  if (m.is_moe() && p.tp > 1 && p.ep > 1 && !p.sequence_parallel)
    throw SpecError({{"parallel.sequence_parallel",
                      "Megatron-LM needs sequence parallelism with both tensor and expert parallelism (tp=" +
                          std::to_string(p.tp) + ", ep=" + std::to_string(p.ep) +
                          "): set parallel.sequence_parallel to true to export this layout"}});
  arg("tensor-model-parallel-size", p.tp);
  arg("pipeline-model-parallel-size", p.pp);
  if (p.cp > 1) arg("context-parallel-size", p.cp);
  if (p.ep > 1) arg("expert-model-parallel-size", p.ep);
  if (spec.uneven_stages()) {
    // Both end stages spelled out on three stages or more, so that the command says the whole split
    // whatever a release makes of an unset one; the first alone on two (with both set no stage is
    // left between them, and Megatron Core divides by that count).
    arg("decoder-first-pipeline-num-layers", spec.stage_layers(0));
    if (p.pp > 2) arg("decoder-last-pipeline-num-layers", spec.stage_layers(p.pp - 1));
    // Megatron-LM refuses --num-layers-per-virtual-pipeline-stage with uneven stages: it takes the
    // virtual stages per rank instead.
    if (p.vpp > 1) arg("num-virtual-stages-per-pipeline-rank", p.vpp);
    out.notes.push_back(p.pp > 2 ? "uneven pipeline stages: Megatron-LM releases without --decoder-first-pipeline-num-layers "
                                   "and --decoder-last-pipeline-num-layers refuse this command"
                                 : "uneven pipeline stages: Megatron-LM releases without --decoder-first-pipeline-num-layers "
                                   "refuse this command");
  } else if (p.vpp > 1) {
    arg("num-layers-per-virtual-pipeline-stage", m.num_layers / (p.pp * p.vpp));
  }
  // Megatron-LM interleaves two stages only with the p2p exchange overlapped (arguments.py); releases
  // before that refuse pp = 2 with interleaving altogether.
  if (p.vpp > 1 && p.pp == 2) {
    flag("overlap-p2p-comm");
    out.notes.push_back("parallel.pp=2 with virtual stages: Megatron-LM needs --overlap-p2p-comm for it, and releases "
                        "before Megatron Core 0.6 refuse it (\"pipeline-model-parallel size should be greater than 2 with "
                        "interleaved schedule\")");
  }
  if (p.sequence_parallel) flag("sequence-parallel");
  if (spec.effective_zero_stage() >= 1) flag("use-distributed-optimizer");
  // The planner overlaps the data-parallel gradient reduction with each chunk's last backward and
  // the distributed optimizer's parameter gather with the first forwards (formulas.md §4);
  // Megatron-LM overlaps them only when asked.
  if (spec.data_parallel() * p.cp > 1) {
    flag("overlap-grad-reduce");
    if (spec.effective_zero_stage() >= 1) flag("overlap-param-gather");
  }
  if (p.zero_stage >= 2)
    out.notes.push_back("parallel.zero_stage=" + std::to_string(p.zero_stage) +
                        ": Megatron-LM shards only the optimizer state (--use-distributed-optimizer); gradients and "
                        "weights stay replicated there");
  if (p.schedule == Schedule::gpipe || p.schedule == Schedule::zb_h1)
    out.notes.push_back("parallel.schedule=" + std::string(to_string(p.schedule)) +
                        ": Megatron-LM runs 1F1B (or interleaved 1F1B) instead");
  arg("micro-batch-size", t.micro_batch_size);
  arg("global-batch-size", t.global_batch_size);
  if (t.precision == Precision::bf16) flag("bf16");
  if (t.precision == Precision::fp16) flag("fp16");
  if (t.recompute == Recompute::selective) arg("recompute-granularity", "selective");
  if (t.recompute == Recompute::full) {
    arg("recompute-granularity", "full");
    arg("recompute-method", "uniform");
    arg("recompute-num-layers", 1);
  }
  if (t.flash_attention && t.precision != Precision::fp32) flag("use-flash-attn");
  if (t.flash_attention && t.precision == Precision::fp32)
    out.notes.push_back("training.flash_attention: flash attention computes in fp16 or bf16 only; the fp32 command "
                        "leaves --use-flash-attn out");
  arg("train-iters", t.train_steps);
  arg("lr", t.lr);
  arg("min-lr", t.min_lr);
  arg("lr-decay-style", "cosine");
  arg("lr-warmup-iters", t.warmup_steps);
  arg("weight-decay", t.weight_decay);
  arg("clip-grad", t.grad_clip);
  arg("seed", t.seed);
  if (t.save_every > 0) {
    arg("save", "checkpoints");
    arg("save-interval", t.save_every);
  }
  out.notes.push_back(std::string("data: the command has no data arguments; add --data-path PREFIX (") +
                      (m.arch == Arch::gpt || m.arch == Arch::llama || m.arch == Arch::mixtral
                           ? "a tokenized indexed dataset), or --mock-data for synthetic tokens"
                           : "a tokenized indexed dataset)") +
                      (t.save_every > 0 ? "; checkpoints go to ./checkpoints (--save)" : ""));
  out.command = a.str();
  return out;
}

nlohmann::json read_hf_config_file(const std::string& path, int pipe_wait_ms) {
  return parse_spec_json(read_spec_file_text(path, "config file", pipe_wait_ms), path, "a config.json");
}

}  // namespace tessera::spec
