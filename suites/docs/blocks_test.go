package docs_test

import (
	"fmt"
	"regexp"
	"strings"
)

// mode says what the docs test does with a shell block.
type mode int

const (
	run  mode = iota // run in the fast pass (CI, label smoke) and in the slow pass
	slow             // run only in the slow pass (label docs-slow): live labs, clusters, long runs
	skip             // illustrative: never run; the directive says why
)

// block is one fenced shell block of a page, with what its directive says about it.
type block struct {
	line   int    // 1-based line of the opening fence
	body   string // the commands, indentation of the fence removed
	mode   mode
	reason string // skip's reason
	// expect is the output the page shows for the block (a fenced block after it marked
	// `<!-- docs-test: output -->`), nil if it shows none.
	expect []string
}

// directivePrefix starts a line that tells the docs test what to do with the fenced block after it.
const directivePrefix = "<!-- docs-test:"

// shellLangs are the fence info strings whose blocks are commands a reader types.
var shellLangs = map[string]bool{"sh": true, "bash": true, "shell": true}

var fenceRE = regexp.MustCompile("^(\\s*)(`{3,}|~{3,})\\s*([^`\\s]*)")

// parseDoc returns the shell blocks of a Markdown page in order. A directive is the last non-blank
// line before a fence, alone on its line:
//
//	<!-- docs-test: skip REASON -->   the block is illustrative (the reason is required)
//	<!-- docs-test: slow -->          the block runs only in the slow pass
//	<!-- docs-test: output -->        this (non-shell) block is the output of the shell block before it
//
// Anything else that starts with `<!-- docs-test:` is an error, as is a directive that is not
// followed by a fenced block, or an output block with no shell block before it: a mistyped directive
// must not silently turn into a block that runs, or one that does not.
func parseDoc(name, text string) ([]block, error) {
	lines := strings.Split(text, "\n")
	var blocks []block
	var pending string // the directive waiting for its fence
	pendingLine := 0
	lastWasShell := false // the previous fenced block was a shell block, with only prose-free lines since
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, directivePrefix) {
			if pending != "" {
				return nil, fmt.Errorf("%s:%d: docs-test directive not followed by a fenced block (another directive at line %d)", name, pendingLine, i+1)
			}
			if !strings.HasSuffix(trimmed, "-->") {
				return nil, fmt.Errorf("%s:%d: docs-test directive must be one line ending in -->: %q", name, i+1, trimmed)
			}
			pending = strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(trimmed, directivePrefix), "-->"))
			pendingLine = i + 1
			continue
		}
		m := fenceRE.FindStringSubmatch(line)
		if m == nil {
			if trimmed != "" {
				if pending != "" {
					return nil, fmt.Errorf("%s:%d: docs-test directive %q not followed by a fenced block", name, pendingLine, pending)
				}
				lastWasShell = false
			}
			continue
		}
		indent, fence, lang := m[1], m[2], strings.ToLower(m[3])
		start := i + 1
		var body []string
		closed := false
		for i++; i < len(lines); i++ {
			t := strings.TrimSpace(lines[i])
			if strings.HasPrefix(t, fence) && strings.Trim(t, fence[:1]) == "" {
				closed = true
				break
			}
			body = append(body, strings.TrimPrefix(lines[i], indent))
		}
		if !closed {
			return nil, fmt.Errorf("%s:%d: fenced block never closed", name, start)
		}
		directive := pending
		pending = ""
		if !shellLangs[lang] {
			if directive == "output" {
				if !lastWasShell {
					return nil, fmt.Errorf("%s:%d: docs-test output block follows no shell block", name, start)
				}
				b := &blocks[len(blocks)-1]
				if b.expect != nil {
					return nil, fmt.Errorf("%s:%d: a second output block for the shell block at line %d", name, start, b.line)
				}
				b.expect = append([]string{}, body...)
				continue
			}
			if directive != "" {
				return nil, fmt.Errorf("%s:%d: docs-test directive %q on a %q block (only sh, bash and shell blocks run; an output block is marked `output`)", name, pendingLine, directive, lang)
			}
			lastWasShell = false
			continue
		}
		b := block{line: start, body: strings.Join(body, "\n")}
		word, rest, _ := strings.Cut(directive, " ")
		rest = strings.TrimSpace(rest)
		switch word {
		case "":
			b.mode = run
		case "slow":
			b.mode = slow
		case "skip":
			if rest == "" {
				return nil, fmt.Errorf("%s:%d: docs-test skip without a reason: say why the block is not run (<!-- docs-test: skip REASON -->)", name, pendingLine)
			}
			b.mode, b.reason = skip, rest
		case "output":
			return nil, fmt.Errorf("%s:%d: docs-test output on a shell block: mark the block that shows the output", name, pendingLine)
		default:
			return nil, fmt.Errorf("%s:%d: unknown docs-test directive %q (skip REASON, slow, output)", name, pendingLine, directive)
		}
		blocks = append(blocks, b)
		lastWasShell = true
	}
	if pending != "" {
		return nil, fmt.Errorf("%s:%d: docs-test directive %q not followed by a fenced block", name, pendingLine, pending)
	}
	return blocks, nil
}

// nameRE finds the lab names a page gives (`--name NAME`), which the test rewrites to unique ones.
var nameRE = regexp.MustCompile(`--name[ =]["']?([a-z0-9][a-z0-9-]*)`)

// labNames are the lab names the page's blocks give with --name.
func labNames(blocks []block) []string {
	seen := map[string]bool{}
	var names []string
	for _, b := range blocks {
		for _, m := range nameRE.FindAllStringSubmatch(b.body, -1) {
			if !seen[m[1]] {
				seen[m[1]] = true
				names = append(names, m[1])
			}
		}
	}
	return names
}

// rename replaces every shell word that is exactly one of the names (delimited by whitespace, quotes,
// '=' or the ends of the text) with the name and the suffix, so a page's `--name ft` ... `lab exec ft
// h0` become one lab no one else's run can collide with.
func rename(body string, names []string, suffix string) string {
	for _, n := range names {
		re := regexp.MustCompile(`(^|[\s"'=])` + regexp.QuoteMeta(n) + `([\s"']|$)`)
		// Twice: adjacent matches share a delimiter, which the first pass consumed.
		for k := 0; k < 2; k++ {
			body = re.ReplaceAllString(body, "${1}"+n+suffix+"${2}")
		}
	}
	return body
}

// matchOutput says whether got (the block's standard output) is what the page shows. Every line of
// want must equal the next line of got (trailing spaces aside); a line "..." stands for any number of
// lines, so a page can show the lines that matter and elide the rest.
func matchOutput(want []string, got string) bool {
	g := strings.Split(strings.TrimRight(got, "\n"), "\n")
	if got == "" {
		g = nil
	}
	for i := range g {
		g[i] = strings.TrimRight(g[i], " \t\r")
	}
	w := make([]string, 0, len(want))
	for _, l := range want {
		w = append(w, strings.TrimRight(l, " \t\r"))
	}
	for len(w) > 0 && w[len(w)-1] == "" {
		w = w[:len(w)-1]
	}
	var match func(w, g []string) bool
	match = func(w, g []string) bool {
		if len(w) == 0 {
			return len(g) == 0
		}
		if strings.TrimSpace(w[0]) == "..." {
			for k := 0; k <= len(g); k++ {
				if match(w[1:], g[k:]) {
					return true
				}
			}
			return false
		}
		return len(g) > 0 && w[0] == g[0] && match(w[1:], g[1:])
	}
	return match(w, g)
}
