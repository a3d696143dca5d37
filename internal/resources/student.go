package resources

// StudentTQuantile is the p-quantile (p > 0.5) of Student's t with df
// degrees of freedom (df need not be whole: a Welch interval's is not),
// scipy's stdtrit(df, p). `gym eval compare` builds its delta intervals on
// it.
func StudentTQuantile(p, df float64) float64 { return studentTQuantile(p, df) }
