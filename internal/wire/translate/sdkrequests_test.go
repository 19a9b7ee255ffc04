package translate

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// testdata/sdkrequests holds the request bodies real clients send, at
// their defaults, recorded by test/e2e's TestFrameworks
// (SLUICE_RECORD_SDK_REQUESTS=1 go test ./test/e2e -run Frameworks):
// <client>-<case>.json, then <client>-<case>-2.json for a case's second
// distinct body. Each is translated to the other API under the default
// Options. A client's default request must never be refused: a failover
// to the other vendor would skip every request it sends. What is
// dropped is held to sdkDropped, so that a new drop (or a drop that
// goes away) after a client's upgrade is seen and decided.

// sdkClients are the recorded clients, by the API they call.
var sdkClients = map[string]string{
	"aisdk-openai-chat":   "chat", // @ai-sdk/openai's openai.chat(model)
	"langchain-openai":    "chat", // ChatOpenAI
	"openai-node":         "chat", // the official openai package
	"aisdk-anthropic":     "messages",
	"langchain-anthropic": "messages", // ChatAnthropic
	"anthropic-node":      "messages", // @anthropic-ai/sdk
	// @ai-sdk/openai's default openai(model) calls the Responses API:
	// its recordings go through the bridge (ResponsesToChat, their
	// item_references resolved as the gateway resolves them, from the
	// items it kept of its own answers: keptItem) and on to Anthropic.
	"aisdk-openai-responses": "responses",
}

// sdkDropped is what translating each recording drops, by file name
// without .json; a recording that is not listed drops nothing.
var sdkDropped = map[string][]string{
	// @ai-sdk/anthropic marks every tool for fine-grained input streaming
	// when it streams; OpenAI streams tool arguments as they come anyway.
	"aisdk-anthropic-agent-streamed":   {"tools.eager_input_streaming"},
	"aisdk-anthropic-agent-streamed-2": {"tools.eager_input_streaming"},
	"aisdk-anthropic-tools-streamed":   {"tools.eager_input_streaming"},
	"aisdk-anthropic-tools-streamed-2": {"tools.eager_input_streaming"},
	// A LangChain tool run by tool.invoke(call) answers with a
	// ToolMessage that names the tool; Anthropic's tool_result names only
	// the call's id.
	"langchain-openai-agent":            {"messages.name"},
	"langchain-openai-agent-streamed-2": {"messages.name"},
}

func TestSDKRequests(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "sdkrequests", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no recordings in testdata/sdkrequests; record them with SLUICE_RECORD_SDK_REQUESTS=1 go test ./test/e2e -run Frameworks")
	}
	seen := map[string]bool{}
	translated := map[string]int{}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		client := sdkClientOf(name)
		if client == "" {
			t.Errorf("%s: no client in sdkClients has this name's prefix; add the client, with the API it calls", f)
			continue
		}
		seen[name] = true
		body, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var tr *Translated
		switch sdkClients[client] {
		case "chat":
			tr, err = RequestToAnthropic(body, Options{})
		case "messages":
			tr, err = RequestToOpenAI(body, Options{})
		default: // responses: see sdkClients
			var chat *Translated
			if chat, err = ResponsesToChat(body, Options{Items: keptItem}); err == nil {
				if tr, err = RequestToAnthropic(chat.Body, Options{}); err == nil {
					tr.Dropped = append(chat.Dropped, tr.Dropped...)
				}
			}
		}
		translated[client]++
		if err != nil {
			t.Errorf("%s: %s's request is refused: %v", name, client, err)
			continue
		}
		if want := sdkDropped[name]; !slices.Equal(tr.Dropped, want) {
			t.Errorf("%s: dropped %q, want %q (sdkDropped)", name, tr.Dropped, want)
		}
	}
	for name := range sdkDropped {
		if !seen[name] {
			t.Errorf("sdkDropped lists %s, which is not recorded", name)
		}
	}
	for client := range sdkClients {
		if translated[client] == 0 {
			t.Errorf("no recording of %s", client)
		}
	}
}

// sdkClientOf is the client whose recording name is a name: the longest
// client name it starts with.
func sdkClientOf(name string) string {
	best := ""
	for c := range sdkClients {
		if strings.HasPrefix(name, c+"-") && len(c) > len(best) {
			best = c
		}
	}
	return best
}

// keptItem stands for the gateway's store of its bridged answers' items
// (server/gateway/responses_items.go): a message or a function call, by
// the id prefix ChatToResponse gives them.
func keptItem(id string) (json.RawMessage, bool) {
	switch {
	case strings.HasPrefix(id, "msg_"):
		return json.RawMessage(`{"id":"` + id + `","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Hello.","annotations":[],"logprobs":[]}]}`), true
	case strings.HasPrefix(id, "fc_"):
		return json.RawMessage(`{"id":"` + id + `","type":"function_call","status":"completed","call_id":"call_` + id + `","name":"get_weather","arguments":"{}"}`), true
	}
	return nil, false
}
