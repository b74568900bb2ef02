package docs_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// linkRE finds Markdown links and their targets: [text](target).
var linkRE = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// slug is GitHub's anchor for a heading: lower case, punctuation other than '-' and '_' dropped,
// spaces to '-'.
func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// anchors are the slugs of a page's headings (outside fenced blocks).
func anchors(text string) map[string]bool {
	out := map[string]bool{}
	fenced := false
	for _, l := range strings.Split(text, "\n") {
		if fenceRE.MatchString(l) {
			fenced = !fenced
			continue
		}
		if !fenced && strings.HasPrefix(l, "#") {
			out[slug(strings.TrimLeft(l, "#"))] = true
		}
	}
	return out
}

// A page moved, or a heading renamed, must not leave a link pointing at nothing.
var _ = Describe("the documentation's links", Label("smoke"), func() {
	It("point at files that exist and at headings they have", func() {
		root := repoRoot()
		var broken []string
		for _, page := range pages(root) {
			text, err := os.ReadFile(filepath.Join(root, page))
			Expect(err).NotTo(HaveOccurred())
			for _, m := range linkRE.FindAllStringSubmatch(string(text), -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				file, anchor, _ := strings.Cut(target, "#")
				path := filepath.Join(root, page)
				if file != "" {
					path = filepath.Join(filepath.Dir(path), file)
				}
				body, err := os.ReadFile(path)
				if err != nil {
					if fi, serr := os.Stat(path); serr == nil && fi.IsDir() && anchor == "" {
						continue
					}
					broken = append(broken, page+": "+target+" (no such file)")
					continue
				}
				if anchor != "" && strings.HasSuffix(path, ".md") && !anchors(string(body))[anchor] {
					broken = append(broken, page+": "+target+" (no such heading)")
				}
			}
		}
		Expect(broken).To(BeEmpty())
	})

	It("slugs headings as GitHub does", func() {
		Expect(slug(" The netns agents' capacity")).To(Equal("the-netns-agents-capacity"))
		Expect(slug("`lab analyze`")).To(Equal("lab-analyze"))
		Expect(slug("Several machines: Compose, Kubernetes, Slurm")).To(Equal("several-machines-compose-kubernetes-slurm"))
	})
})
