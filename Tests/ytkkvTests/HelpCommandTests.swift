import Testing

@Suite("ytkkv help")
struct HelpCommandTests {
  @Test("help and --help list every command; a command's --help shows its usage")
  func listsCommands() throws {
    for arguments in [["help"], ["--help"]] {
      let result = try Tool.run(arguments)
      #expect(result.status == 0)
      for command in [
        "demo", "tables", "get", "put", "delete", "dump", "load", "stats", "verify", "compact",
        "backup", "recover",
      ] {
        #expect(result.standardOutput.contains("  \(command) "), "\(command) in \(arguments)")
      }
    }
    let get = try Tool.run(["get", "--help"])
    #expect(get.status == 0)
    #expect(get.standardOutput.contains("Usage: ytkkv get PATH TABLE ID"))
    #expect(try Tool.run(["help", "get"]).standardOutput == get.standardOutput)
  }

  @Test("no command, an unknown command or an unknown topic is a usage error (64)")
  func usageErrors() throws {
    #expect(try Tool.run([]).status == 64)
    let unknown = try Tool.run(["frobnicate"])
    #expect(unknown.status == 64)
    #expect(unknown.standardError.contains("unknown command 'frobnicate'"))
    #expect(try Tool.run(["help", "frobnicate"]).status == 64)
  }
}
