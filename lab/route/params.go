package route

// algorithmKeys lists the spec routing keys each algorithm reads. The spec lets one routing block be
// swept across algorithms, so the lab passes an algorithm only the keys it takes (SpecParams); a key
// given directly to New that an algorithm does not take is still an error.
var algorithmKeys = map[string][]string{
	"ksp":           {"k"},
	"fc":            {"max_paths"},
	"shortest":      {"max_paths"},
	"dfksp":         {"k", "lossless_priorities"},
	"updown":        {"trials", "seed", "max_paths"},
	"smart":         {"trials", "seed", "max_paths"},
	"vlb":           {"seed"},
	"hybrid":        {"threshold", "seed"},
	"ugal":          {"threshold", "seed", "lossless_priorities"},
	"minimal":       {"lossless_priorities"},
	"ugal-periodic": {"threshold", "seed", "lossless_priorities"},
	"ugal-pb":       {"threshold", "seed", "lossless_priorities"},
	"telemetry":     {"lossless_priorities"},
	"ate":           {"p", "measure", "seed"},
}

// SpecParams keeps the keys of all (the spec's routing block, as strings) that algorithm alg reads.
func SpecParams(alg string, all map[string]string) map[string]string {
	out := map[string]string{}
	for _, k := range algorithmKeys[alg] {
		if v, ok := all[k]; ok {
			out[k] = v
		}
	}
	return out
}
