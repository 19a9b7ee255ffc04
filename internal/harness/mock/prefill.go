package mock

import (
	"encoding/json"
	"hash/fnv"
	"math/rand/v2"
	"strings"
)

// A prefilled call asks the model to continue an answer it has begun:
// an Anthropic request whose last message is the assistant's, or an
// OpenAI chat request whose last message is the assistant's and that
// sets vLLM's continue_final_message (or add_generation_prompt false).
// The mock continues the answer after the prefill's words: its answer
// is the call's answer without its first k words, k the words the
// prefill holds, so a continuation of a cut answer carries exactly the
// rest when both calls draw the same words (Config.Words prompt). A
// model with Config.AssistantPrefill refuse answers 400 instead.

// prefillOf reports the prefill of a message list: the last message's
// text, when it is the assistant's and the request asks to continue it.
func prefillOf(msgs []message, continues bool) (string, bool) {
	if !continues || len(msgs) == 0 || msgs[len(msgs)-1].Role != "assistant" {
		return "", false
	}
	return contentText(msgs[len(msgs)-1].Content), true
}

// openAIContinues reads vLLM's flags for continuing the final message.
func openAIContinues(body []byte) bool {
	var q struct {
		ContinueFinalMessage bool  `json:"continue_final_message"`
		AddGenerationPrompt  *bool `json:"add_generation_prompt"`
	}
	json.Unmarshal(body, &q)
	return q.ContinueFinalMessage || (q.AddGenerationPrompt != nil && !*q.AddGenerationPrompt)
}

// setPrompt records what the call's words are derived from (the prompt
// without any prefill) and how many words of the answer the prefill
// already holds.
func (c *call) setPrompt(system json.RawMessage, msgs []message, continues bool) {
	if pre, ok := prefillOf(msgs, continues); ok {
		c.prefilled, c.skip = true, len(strings.Fields(pre))
		msgs = msgs[:len(msgs)-1]
	}
	c.prompt = promptOf(system, msgs)
}

// promptOf is the text of a system prompt and messages, each followed by
// a newline: the same text whether the system prompt is Anthropic's
// field or OpenAI's first message, so a prompt translated between
// dialects keeps its words.
func promptOf(system json.RawMessage, msgs []message) string {
	var b strings.Builder
	add := func(raw json.RawMessage) {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			b.WriteString(s + "\n")
			return
		}
		var parts []struct {
			Text string `json:"text"`
		}
		if json.Unmarshal(raw, &parts) == nil {
			for _, p := range parts {
				b.WriteString(p.Text + "\n")
			}
		}
	}
	add(system)
	for _, m := range msgs {
		add(m.Content)
	}
	return b.String()
}

// promptWords is the source of the words a `words: prompt` mock answers
// prompt with: a function of the prompt's text alone.
func promptWords(prompt string) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte(prompt))
	sum := h.Sum64()
	return rand.New(rand.NewPCG(sum, sum^0x9e3779b97f4a7c15))
}

// ExpectedAnswer is the whole text a mock with Config.Words prompt (or
// X-Mock-Words: prompt) answers a chat request with, when the answer is
// tokens words long (fix it with output_tokens or X-Mock-Output-Tokens)
// and no scripted Answer or tool call applies. body is the client's
// request, OpenAI chat or Anthropic messages, ending with the user's
// turn. However a gateway splits the answer over calls (a cut, then a
// prefilled continuation on another provider that also draws words from
// the prompt), the client should end with exactly this text.
func ExpectedAnswer(body []byte, tokens int) (string, error) {
	var q struct {
		System   json.RawMessage `json:"system"`
		Messages []message       `json:"messages"`
	}
	if err := json.Unmarshal(body, &q); err != nil {
		return "", err
	}
	rng := promptWords(promptOf(q.System, q.Messages))
	var b strings.Builder
	for range tokens {
		b.WriteString(word(rng))
	}
	return b.String(), nil
}
