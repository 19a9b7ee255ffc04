package protocol

import "testing"

func TestChoices(t *testing.T) {
	chat, completions, messages := Endpoints[0], Endpoints[1], Endpoints[3]
	for _, c := range []struct {
		ep   Endpoint
		body string
		want int64
	}{
		{chat, `{"model":"m","messages":[]}`, 1},
		{chat, `{"model":"m","n":10,"max_tokens":100}`, 10},
		{chat, `{"model":"m","n":"3"}`, 3},
		{chat, `{"model":"m","n":2.5}`, 3},
		{chat, `{"model":"m","n":0}`, 1},
		{chat, `{"model":"m","n":null}`, 1},
		{chat, `{"model":"m","n":1e300}`, MaxChoices},
		{chat, `{"model":"m","\u006e":4}`, 4}, // an escaped key, as a JSON parser reads it
		{chat, `{"model":"m","N":4}`, 1},      // keys are case-sensitive
		{chat, `{"model":"m","messages":[{"n":9}]}`, 1},
		{completions, `{"model":"m","prompt":"x","n":2,"best_of":5}`, 5},
		{completions, `{"model":"m","prompt":"x","n":4,"best_of":2}`, 4},
		{messages, `{"model":"m","n":10}`, 1},
		{Responses, `{"model":"m","n":10}`, 1},
		{Endpoints[2], `{"model":"m","n":10}`, 1}, // embeddings
	} {
		if _, err := ParseBody([]byte(c.body)); err != nil {
			t.Fatalf("%s: %v", c.body, err)
		}
		if got := Choices(c.ep, []byte(c.body)); got != c.want {
			t.Errorf("%s %s: %d, want %d", c.ep.Name, c.body, got, c.want)
		}
	}
}
