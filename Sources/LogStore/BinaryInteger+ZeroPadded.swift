extension BinaryInteger {
  /// The number in decimal with zeros in front to make at least `width` digits (after a minus
  /// sign, for a negative one): `7.zeroPadded(width: 6)` is `"000007"`. The one way file
  /// numbers, dates in file names and the tool's timestamps are written, so that they sort
  /// as text the way they sort as numbers.
  package func zeroPadded(width: Int) -> String {
    let digits = String(magnitude)
    let zeros = String(repeating: "0", count: Swift.max(0, width - digits.count))
    return (self < 0 ? "-" : "") + zeros + digits
  }
}
