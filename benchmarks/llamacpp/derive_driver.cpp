// Reads model outputs with llama.cpp's chat parsing, one request per line, for benchmarks/bench_derive.py.
//
// stdin, one JSON object per line:
//   {"chat_template": str, "bos": str, "eos": str, "tools": [OpenAI tool dicts] | null,
//    "enable_thinking": bool | null, "output": str, "prefix": str (optional)}
// stdout, one JSON object per line:
//   {"ok": true, "format": str, "generation_prompt": str, "enable_thinking": bool,
//    "message": {"reasoning_content": str, "content": str, "tool_calls": [{"name", "arguments", "id"}]}}
//   or {"ok": false, "stage": "request" | "init" | "apply" | "parse", "error": str}
//
// Each request is handled the way llama-server handles a chat completion with tools: the chat template
// is loaded from its text (no model), applied to a one-message conversation with the tools, the
// reasoning format "deepseek" and parallel tool calls; the completion is then parsed (not partial) with
// the parser and generation prompt that apply() returned.
//
// "prefix" is the prompt the recorded output was written after (the assistant header, or the whole
// conversation). enable_thinking null means: as the prefix shows, i.e. true unless only false gives a
// generation prompt found in the prefix. When the prefix goes on after llama.cpp's generation prompt
// (say it pre-opens "<think>\n" and llama.cpp's does not), the model under llama-server would have
// written the rest itself, so it is put in front of the output. When llama.cpp's generation prompt goes
// on after the end of the prefix and the output starts with the difference, the difference is dropped
// (llama-server prompted it, the model would not write it again).

#include "chat.h"
#include "common.h"
#include "log.h"

#include <nlohmann/json.hpp>

#include <iostream>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

using ojson = nlohmann::ordered_json;

namespace {

struct driver_request {
    std::string chat_template;
    std::string bos;
    std::string eos;
    std::vector<common_chat_tool> tools;
    bool enable_thinking = true;
    bool thinking_given = false;
    std::string output;
    std::string prefix;
    bool has_prefix = false;
};

std::string string_field(const ojson & obj, const char * key) {
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) {
        return "";
    }
    return it->get<std::string>();
}

driver_request read_request(const ojson & line) {
    driver_request req;
    req.chat_template = string_field(line, "chat_template");
    req.bos = string_field(line, "bos");
    req.eos = string_field(line, "eos");
    req.output = string_field(line, "output");
    req.has_prefix = line.contains("prefix") && line.at("prefix").is_string();
    req.prefix = string_field(line, "prefix");
    if (line.contains("enable_thinking") && line.at("enable_thinking").is_boolean()) {
        req.enable_thinking = line.at("enable_thinking").get<bool>();
        req.thinking_given = true;
    }
    if (line.contains("tools") && line.at("tools").is_array()) {
        for (const auto & tool : line.at("tools")) {
            const auto & fn = tool.contains("function") ? tool.at("function") : tool;
            common_chat_tool t;
            t.name = fn.at("name").get<std::string>();
            t.description = fn.contains("description") && fn.at("description").is_string()
                ? fn.at("description").get<std::string>() : "";
            t.parameters = fn.contains("parameters") ? fn.at("parameters").dump() : "{}";
            req.tools.push_back(std::move(t));
        }
    }
    return req;
}

// Where a request failed: loading the template, applying it (parser generation) or parsing the output.
struct stage_error : std::runtime_error {
    std::string stage;
    stage_error(std::string stage, const std::string & what) : std::runtime_error(what), stage(std::move(stage)) {}
};

using template_key = std::tuple<std::string, std::string, std::string>;
using params_key = std::tuple<std::string, std::string, std::string, std::string, bool>;

// Templates by (text, bos, eos) and apply() results by the same plus the tools and enable_thinking:
// the benchmark sends each chat template's outputs with a handful of tool lists.
class driver_cache {
  public:
    const common_chat_params & params(const driver_request & req) {
        std::string tools_key;
        for (const auto & t : req.tools) {
            tools_key += t.name + '\x1f' + t.description + '\x1f' + t.parameters + '\x1e';
        }
        params_key key{ req.chat_template, req.bos, req.eos, tools_key, req.enable_thinking };
        auto it = params_.find(key);
        if (it == params_.end()) {
            it = params_.emplace(key, apply(templates(req), req)).first;
        }
        return it->second;
    }

  private:
    const common_chat_templates * templates(const driver_request & req) {
        template_key key{ req.chat_template, req.bos, req.eos };
        auto it = templates_.find(key);
        if (it == templates_.end()) {
            try {
                it = templates_.emplace(key, common_chat_templates_init(nullptr, req.chat_template, req.bos, req.eos)).first;
            } catch (const std::exception & exc) {
                throw stage_error("init", exc.what());
            }
        }
        return it->second.get();
    }

    static common_chat_params apply(const common_chat_templates * tmpls, const driver_request & req) {
        common_chat_msg user;
        user.role = "user";
        user.content = "What is the weather like in Paris today?";

        common_chat_templates_inputs inputs;
        inputs.messages = { user };
        inputs.tools = req.tools;
        inputs.tool_choice = COMMON_CHAT_TOOL_CHOICE_AUTO;
        inputs.parallel_tool_calls = true;
        inputs.add_generation_prompt = true;
        inputs.use_jinja = true;
        inputs.reasoning_format = COMMON_REASONING_FORMAT_DEEPSEEK;
        inputs.enable_thinking = req.enable_thinking;
        try {
            return common_chat_templates_apply(tmpls, inputs);
        } catch (const std::exception & exc) {
            throw stage_error("apply", exc.what());
        }
    }

    std::map<template_key, common_chat_templates_ptr> templates_;
    std::map<params_key, common_chat_params> params_;
};

bool starts_with(const std::string & text, const std::string & head) {
    return text.compare(0, head.size(), head) == 0;
}

// The output as llama-server would have received it after its own generation prompt `gp`.
std::string align_output(const std::string & prefix, const std::string & gp, const std::string & output) {
    if (gp.empty()) {
        return output;
    }
    size_t at = prefix.rfind(gp);
    if (at != std::string::npos) {
        return prefix.substr(at + gp.size()) + output;
    }
    for (size_t keep = gp.size() - 1; keep > 0; --keep) {
        if (prefix.size() >= keep && prefix.compare(prefix.size() - keep, keep, gp, 0, keep) == 0) {
            std::string missing = gp.substr(keep);
            return starts_with(output, missing) ? output.substr(missing.size()) : output;
        }
    }
    return output;
}

ojson handle(driver_cache & cache, driver_request req) {
    if (!req.thinking_given) {
        req.enable_thinking = true;
        if (req.has_prefix && req.prefix.rfind(cache.params(req).generation_prompt) == std::string::npos) {
            req.enable_thinking = false;
            const common_chat_params * off = nullptr;
            try {
                off = &cache.params(req);
            } catch (const stage_error &) {
                off = nullptr;
            }
            if (off == nullptr || req.prefix.rfind(off->generation_prompt) == std::string::npos) {
                req.enable_thinking = true;
            }
        }
    }
    const common_chat_params & params = cache.params(req);

    common_chat_parser_params parser_params(params);
    parser_params.reasoning_format = COMMON_REASONING_FORMAT_DEEPSEEK;
    parser_params.parse_tool_calls = true;
    if (!params.parser.empty()) {
        parser_params.parser.load(params.parser);
    }

    const std::string & gp = params.generation_prompt;
    std::string output = req.has_prefix ? align_output(req.prefix, gp, req.output) : req.output;

    common_chat_msg msg;
    try {
        msg = common_chat_parse(output, /* is_partial= */ false, parser_params);
    } catch (const std::exception & exc) {
        throw stage_error("parse", exc.what());
    }

    ojson calls = ojson::array();
    for (const auto & call : msg.tool_calls) {
        calls.push_back({ { "name", call.name }, { "arguments", call.arguments }, { "id", call.id } });
    }
    ojson message = {
        { "reasoning_content", msg.reasoning_content },
        { "content", msg.content },
        { "tool_calls", calls },
    };
    return {
        { "ok", true },
        { "format", common_chat_format_name(params.format) },
        { "generation_prompt", gp },
        { "enable_thinking", req.enable_thinking },
        { "message", message },
    };
}

}  // namespace

int main() {
    // llama.cpp's log lines go to stderr; keep only errors so the benchmark's pipe stays quiet
    common_log_set_verbosity_thold(-1);

    driver_cache cache;
    std::string line;
    while (std::getline(std::cin, line)) {
        if (line.empty()) {
            continue;
        }
        ojson reply;
        try {
            reply = handle(cache, read_request(ojson::parse(line)));
        } catch (const stage_error & exc) {
            reply = { { "ok", false }, { "stage", exc.stage }, { "error", exc.what() } };
        } catch (const std::exception & exc) {
            reply = { { "ok", false }, { "stage", "request" }, { "error", exc.what() } };
        } catch (...) {
            reply = { { "ok", false }, { "error", "unknown exception" } };
        }
        std::cout << reply.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n' << std::flush;
    }
    return 0;
}
