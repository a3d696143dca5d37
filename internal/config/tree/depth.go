package tree

import "strconv"

// MaxDepth is how deeply gym lets a config nest: maps and lists within one
// another, counting the top-level map as level 1, whether they come from a
// YAML file (aliases included), an override's key and value, directives or
// resolved interpolations; and how deeply interpolations may nest in one
// string or resolve through one another. Every stage refuses deeper input
// with an error naming where it is, so that no stage's time, memory or
// stack can grow with hostile nesting (10,000 brackets once took minutes
// and gigabytes). No config NeMo Gym can load comes near it: there Python's
// recursion limit stops PyYAML near 490 levels, OmegaConf near 80 nested
// maps, and an interpolation chain near 60 links.
const MaxDepth = 512

// DepthProblem is what every stage says of input nested past MaxDepth.
func DepthProblem() string {
	return "nesting deeper than " + strconv.Itoa(MaxDepth) + " levels"
}

// TooDeep returns a map or list of n that sits deeper than MaxDepth, when
// n itself is at the given level, or nil when there is none. It never
// looks past the limit, so its stack stays bounded however deep n is.
func TooDeep(n *Node, level int) *Node {
	if n.IsScalar() {
		return nil
	}
	if level > MaxDepth {
		return n
	}
	for _, e := range n.Entries {
		if d := TooDeep(e.Value, level+1); d != nil {
			return d
		}
	}
	for _, it := range n.Items {
		if d := TooDeep(it, level+1); d != nil {
			return d
		}
	}
	return nil
}
