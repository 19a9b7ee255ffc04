package config

import "fmt"

// How a broken stream may be continued on a target (lifecycle's
// continuation), as a provider's or a target's continuation setting:
//
//   - "prefill": the target takes an assistant prefill (the text so far
//     as the start of its own message) and, failing that, a prompt;
//   - "prompt": only a continuation prompt (a user message asking it to
//     continue exactly from the text so far);
//   - "none": the target is never used to continue another's answer.
//
// The default is prefill for kind anthropic (a trailing assistant
// message is Anthropic's documented prefill) and prompt for openai and
// azure: OpenAI's own API has no prefill, and vLLM or SGLang, which
// take one (continue_final_message), are declared with prefill. A
// continuation prompt works on any chat model.
const (
	ContinuePrefill = "prefill"
	ContinuePrompt  = "prompt"
	ContinueNone    = "none"
)

// ContinuationCaps is target t's, on provider p: the target's own
// setting, else the provider's, else the default.
func ContinuationCaps(p Provider, t Target) (prefill, prompt bool) {
	mode := ContinuePrompt
	if p.Kind == "anthropic" {
		mode = ContinuePrefill
	}
	if p.Continuation != "" {
		mode = p.Continuation
	}
	if t.Continuation != "" {
		mode = t.Continuation
	}
	switch mode {
	case ContinuePrefill:
		return true, true
	case ContinuePrompt:
		return false, true
	}
	return false, false
}

// validateContinuation: each continuation setting is one of the three,
// and the stall bounds are not negative.
func (c *Config) validateContinuation(v *checker) {
	for i, p := range c.Providers {
		if p.Continuation != "" {
			v.oneOf(fmt.Sprintf("providers[%d].continuation", i), p.Continuation, ContinuePrefill, ContinuePrompt, ContinueNone)
		}
	}
	for i, m := range c.Models {
		for j, t := range m.Targets {
			if t.Continuation != "" {
				v.oneOf(fmt.Sprintf("models[%d].targets[%d].continuation", i, j), t.Continuation, ContinuePrefill, ContinuePrompt, ContinueNone)
			}
		}
	}
	if c.Server.StreamStallTimeout < 0 || c.Server.StreamStallFloor < 0 {
		v.add("server.stream_stall_timeout", "must not be negative; write e.g. 15s, or remove it for the default")
	}
}
