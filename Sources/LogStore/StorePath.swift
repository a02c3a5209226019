/// How the package spells paths: a store is named by its directory's path, written without
/// trailing slashes, so that `dir/` and `dir` are one store and every file path built from it
/// (`directory + "/" + name`) has a single slash.
package enum StorePath {
  /// `path` without trailing slashes; `/` stays `/`.
  package static func trimmingTrailingSlashes(_ path: String) -> String {
    var path = Substring(path)
    while path.count > 1 && path.hasSuffix("/") { path = path.dropLast() }
    return String(path)
  }

  /// The last component of `path`: the whole of a bare name.
  package static func name(of path: String) -> String {
    guard let slash = path.lastIndex(of: "/") else { return path }
    return String(path[path.index(after: slash)...])
  }

  /// The directory that holds `path`: `.` for a bare name, `/` for a name in the root.
  package static func parent(of path: String) -> String {
    guard let slash = path.lastIndex(of: "/") else { return "." }
    return slash == path.startIndex ? "/" : String(path[..<slash])
  }
}
