extension Duration {
    /// Whole and fractional milliseconds, for logs.
    var milliseconds: Double { Double(components.seconds) * 1000 + Double(components.attoseconds) / 1e15 }
}
