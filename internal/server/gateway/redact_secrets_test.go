package gateway

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/sluice-gw/sluice/internal/wire/native"
)

// A secret inside any text that is base64-encoded whole, in either
// alphabet, wherever it starts, is found and blanked: the encoding
// holds one of its forms, and what is left decodes, at any alignment,
// to no six bytes of the secret.
func TestSecretFormsInBase64(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 33))
	const secret = "IQoJb3JpZ2luX2VjE/sluice+session/Token?0123>"
	k := newKeyScrub(secret)
	for trial := range 300 {
		pre, post := make([]byte, rng.IntN(9)), make([]byte, rng.IntN(9))
		for _, b := range [][]byte{pre, post} {
			for i := range b {
				b[i] = byte(rng.IntN(256))
			}
		}
		plain := append(append(append([]byte{}, pre...), secret...), post...)
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding} {
			e := []byte(`{"dump":"` + enc.EncodeToString(plain) + `"}`)
			k.scrub(e)
			if !bytes.Contains(e, []byte("**********")) {
				t.Fatalf("trial %d: the base64 of the secret was not found in %s", trial, e)
			}
			for _, run := range bytes.Split(e[len(`{"dump":"`):len(e)-2], []byte("*")) {
				run = bytes.TrimRight(run, "=")
				for off := range 4 {
					r := run[min(off, len(run)):]
					r = r[:len(r)/4*4]
					for _, dec := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
						d, err := dec.DecodeString(string(r))
						if err != nil {
							continue
						}
						for i := 0; i+6 <= len(secret); i++ {
							if bytes.Contains(d, []byte(secret[i:i+6])) {
								t.Fatalf("trial %d: %s decodes to %q, part of the secret", trial, run, d)
							}
						}
					}
				}
			}
		}
	}
}

// Every form of a secret is one more pattern of the same matcher, read
// through JSON's escapes like the secret itself.
func TestSecretFormsThroughEscapes(t *testing.T) {
	const secret = "tok/en+with=odd&chars-0123456789"
	k := newKeyScrub(secret)
	b64 := base64.StdEncoding.EncodeToString([]byte(secret))
	for _, in := range []string{
		secret,
		strings.ReplaceAll(secret, "/", `\/`),
		`tok%2Fen%2Bwith%3Dodd%26chars-0123456789`,
		b64,
		strings.ReplaceAll(b64, "/", `\/`),
		`\u0074ok/en+with=odd&chars-0123456789`,
	} {
		p := []byte(`{"text":"said ` + in + ` ok"}`)
		k.scrub(p)
		// All of it blanked, but for base64's last characters, which
		// depend on what follows the secret too.
		if n := bytes.Count(p, []byte("*")); n < len(in)-3 || !bytes.Contains(p, []byte("said "+strings.Repeat("*", n))) {
			t.Errorf("%s: scrubbed to %s", in, p)
		}
		if got := string(k.text([]byte(`{"message":"said ` + in + ` ok"}`))); strings.Contains(got, "0123456789") {
			t.Errorf("%s: text kept it: %s", in, got)
		}
	}
}

// A message cut short inside a secret (a codec keeps 2 KiB of a
// vendor's words) loses what is left of it, at a string's end or the
// text's, when that is eight bytes or more; a shorter end, or a start
// of it followed by more text, is ordinary text.
func TestTextRedactsASecretCutShort(t *testing.T) {
	const secret = "AKIASLUICEENV0000001"
	k := newKeyScrub(secret)
	for in, want := range map[string]string{
		`{"message":"denied for AKIASLUICEE"}`:     `{"message":"denied for [redacted]"}`,
		`{"message":"denied for AKIASLUICEE`:       `{"message":"denied for [redacted]`,
		`{"message":"denied for AKIASLU"}`:         `{"message":"denied for AKIASLU"}`,
		`{"message":"AKIASLUICEE and more"}`:       `{"message":"AKIASLUICEE and more"}`,
		`{"a":"x AKIASLUICEE","b":"y AKIASLUICE"}`: `{"a":"x [redacted]","b":"y [redacted]"}`,
		`{"message":"denied \"AKIASLUICEE\""}`:     `{"message":"denied \"AKIASLUICEE\""}`,
	} {
		if got := string(k.text([]byte(in))); got != want {
			t.Errorf("text(%s) = %s, want %s", in, got, want)
		}
	}
}

// A request's set: a provider's static secrets are shared, not copied,
// and joining them costs nothing; what a signer reports makes a new set
// once, the provider's set untouched; reporting it again changes
// nothing; a second provider's secrets join the first's. Writers and
// readers may race (hedges sign on their own goroutines).
func TestCredentialsSet(t *testing.T) {
	p := &provider{scrub: newKeyScrub("static-provider-key-0123")}
	q := &provider{scrub: newKeyScrub("other-provider-key-4567")}
	var c credentials
	if c.scrubber() != noSecrets || (*credentials)(nil).scrubber() != noSecrets {
		t.Fatal("an empty set scrubs something")
	}
	ctx := context.Background()
	if got := c.calling(ctx, p); got != ctx {
		t.Error("a provider that signs nothing got a sink")
	}
	if c.scrubber() != p.scrub {
		t.Fatal("a provider's static set was copied")
	}
	if n := testing.AllocsPerRun(100, func() { c.calling(ctx, p) }); n != 0 {
		t.Errorf("joining a provider's set again allocates %v times", n)
	}
	c.Credentials("ya29.reported-access-token-0123", "", "short")
	k := c.scrubber()
	if k == p.scrub || !slices.Contains(k.secrets, "ya29.reported-access-token-0123") || !slices.Contains(k.secrets, "static-provider-key-0123") || slices.Contains(k.secrets, "short") {
		t.Fatalf("after a report the set holds %q", k.secrets)
	}
	if len(p.scrub.secrets) != 1 {
		t.Fatal("a report changed the provider's own set")
	}
	c.Credentials("ya29.reported-access-token-0123")
	if c.scrubber() != k {
		t.Error("a second report of the same secret made a new set")
	}
	c.calling(ctx, q)
	if !slices.Contains(c.scrubber().secrets, "other-provider-key-4567") || len(c.scrubber().secrets) != 3 {
		t.Errorf("after a second provider the set holds %q", c.scrubber().secrets)
	}

	var race credentials
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			race.calling(ctx, p)
			race.Credentials(strings.Repeat(string(rune('a'+i)), 12))
			race.scrubber().scrub([]byte("some text aaaaaaaaaaaa"))
		})
	}
	wg.Wait()
	if n := len(race.scrubber().secrets); n != 9 {
		t.Errorf("racing writers left %d secrets, want 9", n)
	}
}

// A native provider's calls carry the set as their signer's sink.
func TestCallingANativeProviderGivesItsSignerTheSet(t *testing.T) {
	p := &provider{scrub: newKeyScrub(), native: &nativeProvider{}}
	var c credentials
	ctx := c.calling(context.Background(), p)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://127.0.0.1/", nil)
	native.UsedCredentials(req, "signed-with-this-token")
	if !slices.Contains(c.scrubber().secrets, "signed-with-this-token") {
		t.Fatalf("the signer's report did not reach the set: %q", c.scrubber().secrets)
	}
}

// What an operator's header carries: its value, a scheme's credential,
// a Basic credential decoded and its password; nothing of the headers
// whose values are public, nor of a label (a value neither named nor
// shaped like a credential), which blanked would mangle every answer
// that says it.
func TestHeaderSecrets(t *testing.T) {
	basic := base64.StdEncoding.EncodeToString([]byte("user:basic-password-1"))
	for _, c := range []struct {
		name, value string
		want        []string
	}{
		{"X-Gw-Auth", "plain-secret-value", []string{"plain-secret-value"}},
		{"Authorization", "Bearer tok-0123456789", []string{"Bearer tok-0123456789", "tok-0123456789"}},
		{"Proxy-Authorization", "Basic " + basic, []string{"Basic " + basic, basic, "user:basic-password-1", "basic-password-1"}},
		{"OpenAI-Organization", "org-Xk2Pq8ZrT0aLm4Wd", []string{"org-Xk2Pq8ZrT0aLm4Wd"}},
		{"X-Tenant", "3f9a2c7e41b84d0f9e6a5b1c", []string{"3f9a2c7e41b84d0f9e6a5b1c"}},
		{"X-Custom", "Token abc123def456ghi789", []string{"Token abc123def456ghi789", "abc123def456ghi789"}},
		{"X-Api-Key", "correcthorsebattery", []string{"correcthorsebattery"}},
		{"Cookie", "session=abcdef", []string{"session=abcdef"}},
		{"X-Env", "production", nil},
		{"HTTP-Referer", "https://app.example.com/chat", nil},
		{"X-Title", "My Support Assistant", nil},
		{"OpenAI-Organization", "org-misconfigured", nil},
		{"anthropic-beta", "prompt-caching-2024-07-31", nil},
		{"Anthropic-Version", "2023-06-01", nil},
		{"user-agent", "my-app/1.0 (linux)", nil},
	} {
		if got := headerSecrets(c.name, c.value); !slices.Equal(got, c.want) {
			t.Errorf("headerSecrets(%s: %s) = %q, want %q", c.name, c.value, got, c.want)
		}
	}
}

// What a request's set costs to make: joining a provider's static set
// (shared, nothing made), and a signer's report, which makes the
// request a set of its own, every form of every secret in it: an OAuth2
// access token's, and a SigV4 call's (access key id, secret, a 1 KiB
// session token, signature) beside the provider's operator header.
func BenchmarkCredentials(b *testing.B) {
	static := &provider{scrub: newKeyScrub("sk-static-provider-key-0123456789")}
	session := strings.Repeat("IQoJb3JpZ2luX2VjE/sluice+session", 32)
	token := "ya29.a0AfB_byC-sluiceBenchToken_" + strings.Repeat("0123456789abcdefghijklmnopqrstuvwxyz", 4)
	creds := []string{"ASIASLUICEBENCH00001", "bench/Secret+Key0123456789abcdefABCDEF", session}
	var sigs [64][]string // a signature a request, made beforehand
	for i := range sigs {
		sigs[i] = []string{fmt.Sprintf("%064x", i+1)}
	}
	for _, c := range []struct {
		name   string
		native bool
		report func(c *credentials, n int)
	}{
		{"static", false, func(*credentials, int) {}},
		{"oauth", true, func(c *credentials, _ int) { c.Credentials(token) }},
		{"sigv4", true, func(c *credentials, n int) { c.Credentials(creds...); c.Credentials(sigs[n%len(sigs)]...) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			p := static
			if c.native {
				p = &provider{scrub: newKeyScrub("opr/Header+Secret-0123456789"), native: &nativeProvider{}}
			}
			x := new(exchange) // the set lives in the request's record
			ctx := context.Background()
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				x.creds = credentials{}
				x.creds.calling(ctx, p)
				c.report(&x.creds, n)
				n++
			}
		})
	}
}

// secretForms writes what the standard library would: the secret,
// url.QueryEscape's form when it differs, and of each alignment's
// base64 the characters that depend on the secret alone, in both
// alphabets.
func TestSecretFormsAsTheLibraryWritesThem(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 500 {
		b := make([]byte, 8+rng.IntN(40))
		for i := range b {
			b[i] = byte(32 + rng.IntN(95))
		}
		s := string(b)
		want := []string{s}
		if q := url.QueryEscape(s); q != s {
			want = append(want, q)
		}
		for o := range 3 {
			enc := base64.StdEncoding.EncodeToString(append(make([]byte, o), s...))
			core := enc[(8*o+5)/6 : 8*(o+len(s))/6]
			want = append(want, core)
			if u := strings.NewReplacer("+", "-", "/", "_").Replace(core); u != core {
				want = append(want, u)
			}
		}
		if got := secretForms(s); !slices.Equal(got, want) {
			t.Fatalf("secretForms(%q) = %q, want %q", s, got, want)
		}
	}
}

// The matcher finds what a search for each key would, whether it
// searches key by key (a few keys) or in one pass over the text (many):
// the first place a key begins, and there the longest.
func TestNextPlainFindsWhatEachKeyWould(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	const alphabet = "abcAB/+=-_0"
	word := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		return string(b)
	}
	for trial := range 2000 {
		var secrets []string
		for range 1 + rng.IntN(5) {
			secrets = append(secrets, word(8+rng.IntN(4)))
		}
		k := newKeyScrub(secrets...)
		text := []byte(word(rng.IntN(80)))
		for _, s := range secrets {
			if rng.IntN(2) == 0 {
				at := rng.IntN(len(text) + 1)
				text = append(text[:at], append([]byte(s), text[at:]...)...)
			}
		}
		from := rng.IntN(len(text) + 1)
		ws, we := -1, -1
		for _, key := range k.keys {
			if i := bytes.Index(text[from:], key); i >= 0 && (ws < 0 || from+i < ws || from+i == ws && from+i+len(key) > we) {
				ws, we = from+i, from+i+len(key)
			}
		}
		if s, e := k.nextPlain(text, from); s != ws || e != we {
			t.Fatalf("trial %d: %d keys, nextPlain(%q, %d) = %d, %d; want %d, %d", trial, len(k.keys), text, from, s, e, ws, we)
		}
	}
}
