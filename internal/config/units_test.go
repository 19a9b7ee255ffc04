package config

import (
	"errors"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

func TestDurationUnmarshal(t *testing.T) {
	tests := []struct {
		in      string
		want    time.Duration
		wantErr string // substring; empty means success
	}{
		{in: "15s", want: 15 * time.Second},
		{in: "1m30s", want: 90 * time.Second},
		{in: "250ms", want: 250 * time.Millisecond},
		{in: `"2h"`, want: 2 * time.Hour},
		{in: "0s", want: 0},
		{in: "~", want: 0},
		{in: `"15"`, wantErr: `"15" has no unit; write 15s`},
		{in: "15", wantErr: "15 has no unit; write 15s"},
		{in: "1.5", wantErr: "1.5 has no unit; write 1.5s"},
		{in: "0", wantErr: "0 has no unit; write 0s"},
		{in: "-1s", wantErr: `"-1s" is negative; write a positive duration such as 1s`},
		{in: "soon", wantErr: `"soon" is not a duration; write a number with a unit`},
		{in: "15 seconds", wantErr: "is not a duration"},
		{in: "true", wantErr: "want a duration such as 15s, got boolean true"},
		{in: "[1s]", wantErr: "want a duration such as 15s, got a list"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			var v struct {
				D Duration `yaml:"d"`
			}
			err := yaml.Unmarshal([]byte("d: "+tt.in), &v)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				if v.D.D() != tt.want {
					t.Fatalf("got %v, want %v", v.D, tt.want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error = %v, want it to contain %q", err, tt.wantErr)
			}
			var ce *Error
			if !errors.As(err, &ce) || ce.Line != 1 {
				t.Fatalf("error %#v should be an *Error on line 1", err)
			}
		})
	}
}

func TestByteSizeUnmarshal(t *testing.T) {
	tests := []struct {
		in      string
		want    int64
		wantErr string
	}{
		{in: "1048576", want: 1 << 20},
		{in: "0", want: 0},
		{in: "1_000", want: 1000},
		{in: "10MiB", want: 10 << 20},
		{in: "1MB", want: 1000000},
		{in: "512KiB", want: 512 << 10},
		{in: "512kib", want: 512 << 10},
		{in: "2 GiB", want: 2 << 30},
		{in: "3gb", want: 3e9},
		{in: "1kb", want: 1000},
		{in: "100B", want: 100},
		{in: `"4096"`, want: 4096},
		{in: "-1", wantErr: "-1 is negative"},
		{in: "1.5MiB", wantErr: `"1.5MiB" is not a size`},
		{in: "10MegaBytes", wantErr: `unknown unit "MegaBytes"; use B, KB, KiB, MB, MiB, GB or GiB`},
		{in: "10TiB", wantErr: "unknown unit"},
		{in: "MiB", wantErr: "is not a size"},
		{in: "1.5", wantErr: "want a size, got number 1.5"},
		{in: "99999999999GiB", wantErr: "too large"},
		{in: "99999999999999999999", wantErr: "want a size"},
		{in: "{a: 1}", wantErr: "want a size, got a mapping"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			var v struct {
				B ByteSize `yaml:"b"`
			}
			err := yaml.Unmarshal([]byte("b: "+tt.in), &v)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				if v.B.Int64() != tt.want {
					t.Fatalf("got %d, want %d", v.B.Int64(), tt.want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error = %v, want it to contain %q", err, tt.wantErr)
			}
		})
	}
}

func TestUnitStringsRoundTrip(t *testing.T) {
	sizes := map[ByteSize]string{
		0: "0B", 100: "100B", 1024: "1KiB", 10 << 20: "10MiB", 3 << 30: "3GiB",
		1000: "1KB", 5e6: "5MB", 2e9: "2GB", 1500: "1500B",
	}
	for b, want := range sizes {
		if got := b.String(); got != want {
			t.Errorf("ByteSize(%d).String() = %q, want %q", int64(b), got, want)
		}
		var back ByteSize
		if err := yaml.Unmarshal([]byte(b.String()), &back); err != nil || back != b {
			t.Errorf("%q parsed back as %d, %v", b.String(), back, err)
		}
	}
	for _, d := range []time.Duration{0, time.Millisecond, 90 * time.Second, 36 * time.Hour} {
		out, err := yaml.Marshal(struct{ D Duration }{Duration(d)})
		if err != nil {
			t.Fatal(err)
		}
		var back struct{ D Duration }
		if err := yaml.Unmarshal(out, &back); err != nil || back.D.D() != d {
			t.Errorf("%v marshalled as %q parsed back as %v, %v", d, out, back.D, err)
		}
	}
}
