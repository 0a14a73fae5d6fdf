package cli

import "testing"

func TestWithoutElapsed(t *testing.T) {
	if got := withoutElapsed("waiting for ns/demo to be Ready (12s): Ready=False"); got != "waiting for ns/demo to be Ready : Ready=False" {
		t.Errorf("got %q", got)
	}
}
