package translate

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// An item_reference the host resolves reads as the item it kept (an
// earlier answer's message or function call, as ChatToResponse wrote
// it); one it does not is refused, naming it; store: false is reported.
func TestResponsesItemReference(t *testing.T) {
	kept := map[string]string{
		"msg_1": `{"id":"msg_1","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Let me look.","annotations":[],"logprobs":[]}]}`,
		"fc_1":  `{"id":"fc_1","type":"function_call","status":"completed","call_id":"call_1","name":"get_weather","arguments":"{\"city\":\"Paris\"}"}`,
	}
	items := func(id string) (json.RawMessage, bool) { v, ok := kept[id]; return json.RawMessage(v), ok }
	body := `{"model":"m","store":false,"input":[{"role":"user","content":"weather?"},{"type":"item_reference","id":"msg_1"},{"type":"item_reference","id":"fc_1"},{"type":"function_call_output","call_id":"call_1","output":"sunny"}]}`
	tr, err := ResponsesToChat([]byte(body), Options{Items: items})
	if err != nil {
		t.Fatal(err)
	}
	var chat struct {
		Messages []struct {
			Role      string
			Content   any
			ToolCalls []struct {
				ID       string
				Function struct{ Name, Arguments string }
			} `json:"tool_calls"`
			ToolCallID string `json:"tool_call_id"`
		}
	}
	if err := json.Unmarshal(tr.Body, &chat); err != nil {
		t.Fatal(err)
	}
	m := chat.Messages
	if len(m) != 3 || m[1].Role != "assistant" || !strings.Contains(string(tr.Body), "Let me look.") || len(m[1].ToolCalls) != 1 ||
		m[1].ToolCalls[0].ID != "call_1" || m[1].ToolCalls[0].Function.Arguments != `{"city":"Paris"}` || m[2].ToolCallID != "call_1" {
		t.Errorf("chat body %s", tr.Body)
	}
	if !tr.NoStore {
		t.Error("store: false not reported")
	}
	_, err = ResponsesToChat([]byte(`{"model":"m","input":[{"type":"item_reference","id":"msg_9"}]}`), Options{Items: items})
	var te *Error
	if !errors.As(err, &te) || te.Param != "input.item_reference" || te.Path != "input[0]" {
		t.Errorf("unknown reference: %v", err)
	}
}
