package wasm

import (
	"bytes"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/wasmsched/wasmsched/abi"
)

// TestGuestOutputIsSafeToPrint: what a guest writes on stdout/stderr or
// through the log import reaches the host log without control characters
// or escape sequences, so it cannot forge log lines or drive a terminal.
func TestGuestOutputIsSafeToPrint(t *testing.T) {
	var buf bytes.Buffer
	o := &output{backend: &Backend{log: hclog.New(&hclog.LoggerOptions{Output: &buf, Level: hclog.Trace})}}
	o.startCall()
	o.write(streamStdout, []byte("red \x1b[31mtext\x1b[0m and a bell\a\n"))
	o.write(streamStderr, []byte("fake\r2026-01-01T00:00:00Z [ERROR] forged\n"))
	o.log(abi.LogWarn, []byte("Plug\x1b]0;title\ain"+string(rune(abi.LogPluginSeparator))+"msg with \x1b[2J clear"))
	o.endCall()
	out := buf.String()
	if strings.ContainsAny(out, "\x1b\a\r") {
		t.Errorf("control characters reached the log:\n%q", out)
	}
	for _, want := range []string{"text", "bell", "forged", "clear"} {
		if !strings.Contains(out, want) {
			t.Errorf("the log lost the guest's words %q:\n%s", want, out)
		}
	}
	if got := strings.Count(out, "\n"); got != 3 {
		t.Errorf("%d log lines for 3 guest lines:\n%s", got, out)
	}
}
