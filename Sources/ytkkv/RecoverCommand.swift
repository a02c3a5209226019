import LogStore

/// `ytkkv recover PATH`: rebuilds a damaged store from what can be read.
struct RecoverCommand: Command {
  static let name = "recover"
  static let abstract = "Salvage every readable item of a damaged store into a fresh one."
  static let usage = "ytkkv recover PATH"
  static let discussion = """
    Copies every table and every item that can still be read (with its created time) into
    a new store, moves the damaged store aside to PATH.damaged-<time> (it is kept, not
    deleted) and puts the new store at PATH. Reports what was saved and what was lost:
    damaged regions skipped, and items whose value failed its checksum. Needs the store not
    to be open in another process.

    Example:
      $ ytkkv recover test.db
      salvaged 1,204 items in 3 tables
      lost: 1 damaged region, 0 unreadable items
      the damaged store is kept at test.db.damaged-20261129T120000Z
    """

  let path: String

  init(_ arguments: ParsedArguments) throws(UsageError) {
    path = try arguments.positional(1)[0]
  }

  func run(_ output: Output) throws -> ExitStatus {
    guard StoreAccess.storeExists(path) else { throw StoreAccess.missing(path) }
    let report = try LogStore.recover(path: path)
    output.print(
      "salvaged \(report.items) item\(report.items == 1 ? "" : "s") in \(report.tables) "
        + "table\(report.tables == 1 ? "" : "s")")
    output.print(
      "lost: \(report.damagedRegions) damaged region\(report.damagedRegions == 1 ? "" : "s"), "
        + "\(report.unreadableItems) unreadable item\(report.unreadableItems == 1 ? "" : "s")")
    output.print("the damaged store is kept at \(report.damagedStorePath)")
    return .success
  }
}
