// The Microsoft JDBC driver (mssql-jdbc) against a tessera server, as a Java service
// would use it: update counts, auto-commit off, savepoints, prepared statements and
// batches, generated keys, callable statements with OUTPUT parameters and a return
// status, table-valued parameters, the parameter types the driver sends, DatabaseMetaData (the catalog
// procedures sp_columns_100, sp_pkeys, sp_fkeys, sp_statistics_100, …), and server
// cursors (selectMethod=cursor, scrollable and updatable result sets: sp_cursoropen,
// sp_cursorfetch, sp_cursor, …). Run by crates/server/tests/jdbc.rs:
//   java -cp 'lib/*' Scenario.java HOST PORT SA_PASSWORD
// Prints one line per check and, when every check passed, "all checks passed".

import java.math.BigDecimal;
import java.sql.*;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

public class Scenario {
    private static final List<String> failures = new ArrayList<>();

    interface Check {
        void run() throws Exception;
    }

    static void check(String name, Check body) {
        try {
            body.run();
            System.out.println("ok   " + name);
        } catch (Throwable e) {
            String why = e instanceof SQLException
                    ? "error " + ((SQLException) e).getErrorCode() + ": " + e.getMessage()
                    : e.toString();
            System.out.println("FAIL " + name + ": " + why);
            failures.add(name);
        }
    }

    static void expect(Object want, Object got, String what) {
        boolean same = want instanceof int[] && got instanceof int[]
                ? Arrays.equals((int[]) want, (int[]) got)
                : want == null ? got == null : want.equals(got);
        if (!same) {
            String w = want instanceof int[] ? Arrays.toString((int[]) want) : String.valueOf(want);
            String g = got instanceof int[] ? Arrays.toString((int[]) got) : String.valueOf(got);
            throw new AssertionError(what + ": expected " + w + ", got " + g);
        }
    }

    static int count(Connection c, String table) throws SQLException {
        try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT COUNT(*) FROM " + table)) {
            rs.next();
            return rs.getInt(1);
        }
    }

    public static void main(String[] args) throws Exception {
        String url = "jdbc:sqlserver://" + args[0] + ":" + args[1]
                + ";user=sa;password=" + args[2] + ";encrypt=false;databaseName=master";
        try (Connection c = DriverManager.getConnection(url)) {
            try (Statement s = c.createStatement()) {
                s.execute("CREATE DATABASE jdbc_scenario");
            }
            c.setCatalog("jdbc_scenario");
            run(c);
        }
        try (Connection c = DriverManager.getConnection(url)) {
            c.setCatalog("jdbc_scenario");
            cursors(c, url);
        }
        try (Connection c = DriverManager.getConnection(url + ";sendStringParametersAsUnicode=false")) {
            c.setCatalog("jdbc_scenario");
            check("varchar parameters (sendStringParametersAsUnicode=false)", () -> {
                try (PreparedStatement p = c.prepareStatement("SELECT ? + 'x', DATALENGTH(?)")) {
                    p.setString(1, "ab");
                    p.setString(2, "cd");
                    try (ResultSet rs = p.executeQuery()) {
                        rs.next();
                        expect("abx", rs.getString(1), "concatenation");
                        expect(2, rs.getInt(2), "bytes of a varchar (not nvarchar) parameter");
                    }
                }
            });
        }
        if (failures.isEmpty()) {
            System.out.println("all checks passed");
        } else {
            System.out.println(failures.size() + " check(s) failed: " + failures);
            System.exit(1);
        }
    }

    static void run(Connection c) throws Exception {
        Statement s = c.createStatement();
        check("DDL update count", () -> {
            expect(0, s.executeUpdate("CREATE TABLE items (id int IDENTITY PRIMARY KEY, name nvarchar(50) NOT NULL, "
                    + "price decimal(10, 2) NULL, at datetime2 NULL, data varbinary(100) NULL, flag bit NULL, big bigint NULL)"),
                    "CREATE TABLE");
        });
        check("INSERT update counts", () -> {
            expect(1, s.executeUpdate("INSERT items (name) VALUES ('a')"), "one row");
            expect(2, s.executeUpdate("INSERT items (name) VALUES ('b'), ('c')"), "two rows");
        });
        check("UPDATE and DELETE update counts", () -> {
            expect(2, s.executeUpdate("UPDATE items SET price = 1.5 WHERE name IN ('a', 'b')"), "UPDATE");
            expect(0, s.executeUpdate("UPDATE items SET price = 2 WHERE name = 'none'"), "UPDATE of no row");
            expect(1, s.executeUpdate("DELETE items WHERE name = 'c'"), "DELETE");
        });
        check("getUpdateCount after execute", () -> {
            expect(false, s.execute("UPDATE items SET price = 3 WHERE name = 'a'"), "execute returns no result set");
            expect(1, s.getUpdateCount(), "update count");
        });
        check("NOCOUNT ON hides the count", () -> {
            s.execute("SET NOCOUNT ON");
            try {
                s.execute("UPDATE items SET price = 4 WHERE name = 'a'");
                expect(-1, s.getUpdateCount(), "update count");
            } finally {
                s.execute("SET NOCOUNT OFF");
            }
        });
        check("prepared INSERT", () -> {
            try (PreparedStatement p = c.prepareStatement("INSERT items (name, price) VALUES (?, ?)")) {
                p.setString(1, "d");
                p.setBigDecimal(2, new BigDecimal("12.34"));
                expect(1, p.executeUpdate(), "first execution");
                p.setString(1, "e");
                p.setBigDecimal(2, new BigDecimal("5.6"));
                expect(1, p.executeUpdate(), "second execution (sp_execute)");
            }
        });
        check("executeBatch", () -> {
            try (PreparedStatement p = c.prepareStatement("INSERT items (name) VALUES (?)")) {
                for (String n : new String[] {"f", "g", "h"}) {
                    p.setString(1, n);
                    p.addBatch();
                }
                expect(new int[] {1, 1, 1}, p.executeBatch(), "batch counts");
            }
        });
        check("getGeneratedKeys", () -> {
            try (Statement g = c.createStatement()) {
                g.executeUpdate("INSERT items (name) VALUES ('k')", Statement.RETURN_GENERATED_KEYS);
                try (ResultSet keys = g.getGeneratedKeys()) {
                    expect(true, keys.next(), "a key");
                    long id = keys.getLong(1);
                    try (ResultSet rs = s.executeQuery("SELECT MAX(id) FROM items")) {
                        rs.next();
                        expect(rs.getLong(1), id, "the new identity");
                    }
                }
            }
        });
        check("auto-commit off: rollback", () -> {
            int before = count(c, "items");
            c.setAutoCommit(false);
            try (PreparedStatement p = c.prepareStatement("INSERT items (name) VALUES (?)")) {
                p.setString(1, "rolled back");
                expect(1, p.executeUpdate(), "insert");
                c.rollback();
            } finally {
                c.setAutoCommit(true);
            }
            expect(before, count(c, "items"), "rows after rollback");
        });
        check("auto-commit off: commit", () -> {
            int before = count(c, "items");
            c.setAutoCommit(false);
            try (PreparedStatement p = c.prepareStatement("INSERT items (name) VALUES (?)")) {
                p.setString(1, "committed");
                expect(1, p.executeUpdate(), "insert");
                s.executeUpdate("UPDATE items SET flag = 1 WHERE name = 'committed'");
                c.commit();
            } finally {
                c.setAutoCommit(true);
            }
            expect(before + 1, count(c, "items"), "rows after commit");
        });
        check("savepoints", () -> {
            int before = count(c, "items");
            c.setAutoCommit(false);
            try {
                s.executeUpdate("INSERT items (name) VALUES ('kept')");
                Savepoint sp = c.setSavepoint("sp1");
                s.executeUpdate("INSERT items (name) VALUES ('undone')");
                c.rollback(sp);
                c.commit();
            } finally {
                c.setAutoCommit(true);
            }
            expect(before + 1, count(c, "items"), "rows after rollback to the savepoint");
        });
        check("parameter types round trip", () -> {
            try (PreparedStatement p = c.prepareStatement(
                    "INSERT items (name, price, at, data, flag, big) VALUES (?, ?, ?, ?, ?, ?)")) {
                p.setNString(1, "types ✓");
                p.setBigDecimal(2, new BigDecimal("98765432.10"));
                p.setTimestamp(3, Timestamp.valueOf("2026-11-29 10:20:30.1234567"));
                p.setBytes(4, new byte[] {1, 2, 3});
                p.setBoolean(5, true);
                p.setLong(6, 9_000_000_000L);
                expect(1, p.executeUpdate(), "insert");
            }
            try (PreparedStatement q = c.prepareStatement("SELECT name, price, at, data, flag, big FROM items WHERE big = ?")) {
                q.setLong(1, 9_000_000_000L);
                try (ResultSet rs = q.executeQuery()) {
                    expect(true, rs.next(), "the row");
                    expect("types ✓", rs.getNString(1), "nvarchar");
                    expect(new BigDecimal("98765432.10"), rs.getBigDecimal(2), "decimal(10,2)");
                    expect(Timestamp.valueOf("2026-11-29 10:20:30.1234567"), rs.getTimestamp(3), "datetime2");
                    expect("[1, 2, 3]", Arrays.toString(rs.getBytes(4)), "varbinary");
                    expect(true, rs.getBoolean(5), "bit");
                    expect(9_000_000_000L, rs.getLong(6), "bigint");
                }
            }
        });
        check("NULL parameters", () -> {
            try (PreparedStatement p = c.prepareStatement("SELECT COUNT(*) FROM items WHERE ? IS NULL")) {
                p.setNull(1, Types.INTEGER);
                try (ResultSet rs = p.executeQuery()) {
                    rs.next();
                    expect(count(c, "items"), rs.getInt(1), "rows");
                }
            }
        });
        check("getParameterMetaData (sp_describe_undeclared_parameters), and setNull with its types", () -> {
            String sql = "UPDATE items SET price = ?, at = ? WHERE name = ? AND big > ?";
            try (PreparedStatement p = c.prepareStatement(sql)) {
                ParameterMetaData m = p.getParameterMetaData();
                expect(4, m.getParameterCount(), "parameters");
                expect(Types.DECIMAL, m.getParameterType(1), "price's type");
                expect(10, m.getPrecision(1), "price's precision");
                expect(2, m.getScale(1), "price's scale");
                expect(Types.TIMESTAMP, m.getParameterType(2), "datetime2");
                expect(Types.NVARCHAR, m.getParameterType(3), "nvarchar(50)");
                expect(50, m.getPrecision(3), "its length");
                expect(Types.BIGINT, m.getParameterType(4), "bigint");
                // What Spring's setNull does: the NULL goes with the type the server suggests.
                for (int i = 1; i <= 4; i++) {
                    p.setNull(i, m.getParameterType(i));
                }
                expect(0, p.executeUpdate(), "no row named NULL");
            }
            try (PreparedStatement p = c.prepareStatement("SELECT name FROM items WHERE ? = ?")) {
                try {
                    p.getParameterMetaData();
                    failures.add("two untyped parameters: no error");
                } catch (SQLException e) {
                    expect(11503, e.getErrorCode(), "two untyped parameters");
                }
            }
        });
        check("a failed statement in a batch ends with its own DONE: the next statement's count is kept", () -> {
            s.execute("CREATE TABLE dup_keys (id int PRIMARY KEY)");
            List<String> seen = new ArrayList<>();
            boolean rs = s.execute("INSERT dup_keys VALUES (1); INSERT dup_keys VALUES (1); "
                    + "INSERT dup_keys VALUES (2); SELECT id FROM dup_keys");
            for (int i = 0; i < 10; i++) {
                try {
                    if (rs) {
                        int n = 0;
                        try (ResultSet r = s.getResultSet()) {
                            while (r.next()) {
                                n++;
                            }
                        }
                        seen.add("rows " + n);
                    } else {
                        int count = s.getUpdateCount();
                        if (count == -1) {
                            break;
                        }
                        seen.add("count " + count);
                    }
                    rs = s.getMoreResults();
                } catch (SQLException e) {
                    seen.add("error " + e.getErrorCode());
                    rs = s.getMoreResults();
                }
            }
            expect("[count 1, error 2627, count 1, rows 2]", seen.toString(), "the batch's results in order");
            s.execute("DROP TABLE dup_keys");
        });
        check("CallableStatement: OUTPUT parameter and return status", () -> {
            s.execute("CREATE PROCEDURE add_one @x int, @y int OUTPUT AS BEGIN SET @y = @x + 1; RETURN 7; END");
            try (CallableStatement cs = c.prepareCall("{? = call add_one(?, ?)}")) {
                cs.registerOutParameter(1, Types.INTEGER);
                cs.setInt(2, 41);
                cs.registerOutParameter(3, Types.INTEGER);
                cs.execute();
                expect(7, cs.getInt(1), "return status");
                expect(42, cs.getInt(3), "OUTPUT parameter");
            }
        });
        check("a procedure's update counts", () -> {
            s.execute("CREATE PROCEDURE touch AS UPDATE items SET flag = 0 WHERE name = 'a'");
            try (CallableStatement cs = c.prepareCall("{call touch}")) {
                expect(1, cs.executeUpdate(), "update count from inside the procedure");
            }
        });
        check("table-valued parameters (SQLServerDataTable) to a procedure and a statement", () -> {
            s.execute("CREATE TYPE dbo.SkuQty AS TABLE (sku varchar(20) NOT NULL PRIMARY KEY, qty int NOT NULL)");
            s.execute("CREATE PROCEDURE total_qty @items dbo.SkuQty READONLY AS SELECT COUNT(*), SUM(qty) FROM @items");
            com.microsoft.sqlserver.jdbc.SQLServerDataTable items = new com.microsoft.sqlserver.jdbc.SQLServerDataTable();
            items.addColumnMetadata("sku", Types.VARCHAR);
            items.addColumnMetadata("qty", Types.INTEGER);
            items.addRow("a", 2);
            items.addRow("b", 5);
            try (com.microsoft.sqlserver.jdbc.SQLServerCallableStatement cs =
                    (com.microsoft.sqlserver.jdbc.SQLServerCallableStatement) c.prepareCall("{call total_qty(?)}")) {
                cs.setStructured(1, "dbo.SkuQty", items);
                try (ResultSet rs = cs.executeQuery()) {
                    expect(true, rs.next(), "a row");
                    expect("2 7", rs.getInt(1) + " " + rs.getInt(2), "count and sum of the rows sent");
                }
            }
            try (com.microsoft.sqlserver.jdbc.SQLServerPreparedStatement ps =
                    (com.microsoft.sqlserver.jdbc.SQLServerPreparedStatement) c.prepareStatement(
                            "SELECT MAX(sku), SUM(qty) FROM ?")) {
                ps.setStructured(1, "dbo.SkuQty", items);
                try (ResultSet rs = ps.executeQuery()) {
                    expect(true, rs.next(), "a row");
                    expect("b 7", rs.getString(1) + " " + rs.getInt(2), "the rows through a prepared statement");
                }
            }
        });
        check("DatabaseMetaData: tables and columns", () -> {
            s.execute("CREATE TABLE parents (id int PRIMARY KEY, label varchar(20) NULL)");
            s.execute("CREATE TABLE children (id int PRIMARY KEY, parent_id int NOT NULL "
                    + "REFERENCES parents (id) ON DELETE CASCADE, note nvarchar(max) NULL)");
            s.execute("CREATE INDEX ix_children_parent ON children (parent_id)");
            DatabaseMetaData md = c.getMetaData();
            List<String> tables = new ArrayList<>();
            try (ResultSet rs = md.getTables(null, "dbo", "%", new String[] {"TABLE"})) {
                while (rs.next()) {
                    tables.add(rs.getString("TABLE_NAME"));
                }
            }
            expect("[children, items, parents]", tables.toString(), "tables");
            try (ResultSet rs = md.getColumns(null, "dbo", "items", "%")) {
                List<String> cols = new ArrayList<>();
                while (rs.next()) {
                    String name = rs.getString("COLUMN_NAME");
                    cols.add(name);
                    if (name.equals("id")) {
                        expect("YES", rs.getString("IS_AUTOINCREMENT"), "id is an identity");
                        expect(Types.INTEGER, rs.getInt("DATA_TYPE"), "id's type");
                    }
                    if (name.equals("name")) {
                        expect(Types.NVARCHAR, rs.getInt("DATA_TYPE"), "name's type");
                        expect(50, rs.getInt("COLUMN_SIZE"), "name's size");
                        expect(DatabaseMetaData.columnNoNulls, rs.getInt("NULLABLE"), "name's nullability");
                    }
                    if (name.equals("price")) {
                        expect(Types.DECIMAL, rs.getInt("DATA_TYPE"), "price's type");
                        expect(10, rs.getInt("COLUMN_SIZE"), "price's precision");
                        expect(2, rs.getInt("DECIMAL_DIGITS"), "price's scale");
                    }
                    if (name.equals("at")) {
                        expect(Types.TIMESTAMP, rs.getInt("DATA_TYPE"), "datetime2's type");
                    }
                }
                expect("[id, name, price, at, data, flag, big]", cols.toString(), "columns in order");
            }
        });
        check("DatabaseMetaData: keys and indexes", () -> {
            DatabaseMetaData md = c.getMetaData();
            try (ResultSet rs = md.getPrimaryKeys(null, "dbo", "children")) {
                expect(true, rs.next(), "a key column");
                expect("id", rs.getString("COLUMN_NAME"), "key column");
                expect(1, rs.getInt("KEY_SEQ"), "key sequence");
                expect(false, rs.next(), "one key column");
            }
            try (ResultSet rs = md.getImportedKeys(null, "dbo", "children")) {
                expect(true, rs.next(), "an imported key");
                expect("parents", rs.getString("PKTABLE_NAME"), "referenced table");
                expect("id", rs.getString("PKCOLUMN_NAME"), "referenced column");
                expect("parent_id", rs.getString("FKCOLUMN_NAME"), "referencing column");
                expect(DatabaseMetaData.importedKeyCascade, rs.getInt("DELETE_RULE"), "ON DELETE CASCADE");
                expect(DatabaseMetaData.importedKeyNoAction, rs.getInt("UPDATE_RULE"), "no ON UPDATE");
                expect(false, rs.next(), "one imported key column");
            }
            try (ResultSet rs = md.getExportedKeys(null, "dbo", "parents")) {
                expect(true, rs.next(), "an exported key");
                expect("children", rs.getString("FKTABLE_NAME"), "referencing table");
            }
            boolean found = false;
            try (ResultSet rs = md.getIndexInfo(null, "dbo", "children", false, true)) {
                while (rs.next()) {
                    if ("ix_children_parent".equals(rs.getString("INDEX_NAME"))) {
                        found = true;
                        expect(true, rs.getBoolean("NON_UNIQUE"), "non-unique index");
                        expect("parent_id", rs.getString("COLUMN_NAME"), "indexed column");
                    }
                }
            }
            expect(true, found, "the index is listed");
            try (ResultSet rs = md.getBestRowIdentifier(null, "dbo", "children", DatabaseMetaData.bestRowSession, true)) {
                expect(true, rs.next(), "a row identifier");
                expect("id", rs.getString("COLUMN_NAME"), "the primary key");
            }
        });
        check("DatabaseMetaData: procedures and types", () -> {
            DatabaseMetaData md = c.getMetaData();
            try (ResultSet rs = md.getProcedures(null, "dbo", "add_one")) {
                expect(true, rs.next(), "the procedure");
                expect("add_one;1", rs.getString("PROCEDURE_NAME"), "its name");
            }
            List<String> params = new ArrayList<>();
            try (ResultSet rs = md.getProcedureColumns(null, "dbo", "add_one", "%")) {
                while (rs.next()) {
                    params.add(rs.getString("COLUMN_NAME") + ":" + rs.getInt("COLUMN_TYPE") + ":" + rs.getInt("DATA_TYPE"));
                }
            }
            expect("[@RETURN_VALUE:" + DatabaseMetaData.procedureColumnReturn + ":4, @x:"
                    + DatabaseMetaData.procedureColumnIn + ":4, @y:" + DatabaseMetaData.procedureColumnInOut + ":4]",
                    params.toString(), "parameters");
            boolean intType = false;
            try (ResultSet rs = md.getTypeInfo()) {
                while (rs.next()) {
                    intType |= rs.getString("TYPE_NAME").equals("int") && rs.getInt("DATA_TYPE") == Types.INTEGER;
                }
            }
            expect(true, intType, "int in the type list");
        });
        check("errors carry their number", () -> {
            try {
                s.executeQuery("SELECT nope FROM items");
                throw new AssertionError("no error");
            } catch (SQLException e) {
                expect(207, e.getErrorCode(), "error number");
            }
        });
        s.close();
    }

    /** The driver's result set log, where each server cursor fetch is one line. */
    static final Logger resultSetLog = Logger.getLogger("com.microsoft.sqlserver.jdbc.internals.SQLServerResultSet");

    interface Body {
        void run() throws Exception;
    }

    /** Runs body; returns the sp_cursorfetch calls the driver made meanwhile ("fetchType:2 startRow:0 numRows:4"). */
    static List<String> fetchesDuring(Body body) throws Exception {
        List<String> fetches = Collections.synchronizedList(new ArrayList<>());
        Handler h = new Handler() {
            public void publish(LogRecord r) {
                String m = r.getMessage();
                if (m != null && m.contains(" fetchType:")) {
                    fetches.add(m.substring(m.indexOf("fetchType:")));
                }
            }

            public void flush() {}

            public void close() {}
        };
        resultSetLog.setUseParentHandlers(false);
        resultSetLog.setLevel(Level.FINER);
        resultSetLog.addHandler(h);
        try {
            body.run();
        } finally {
            resultSetLog.removeHandler(h);
            resultSetLog.setLevel(null);
        }
        return fetches;
    }

    /** The server cursor behind a result set (0: none, the rows came directly). */
    static int serverCursorId(ResultSet rs) throws Exception {
        Class<?> k = Class.forName("com.microsoft.sqlserver.jdbc.SQLServerResultSet");
        java.lang.reflect.Method m = k.getDeclaredMethod("getServerCursorId");
        m.setAccessible(true);
        return (Integer) m.invoke(rs.unwrap(k));
    }

    static List<Integer> ids(ResultSet rs) throws SQLException {
        List<Integer> ids = new ArrayList<>();
        while (rs.next()) {
            ids.add(rs.getInt(1));
        }
        return ids;
    }

    static List<Integer> range(int from, int to) {
        List<Integer> r = new ArrayList<>();
        for (int i = from; i <= to; i++) {
            r.add(i);
        }
        return r;
    }

    static String rows(Connection c, String query) throws SQLException {
        List<String> out = new ArrayList<>();
        try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery(query)) {
            int n = rs.getMetaData().getColumnCount();
            while (rs.next()) {
                List<String> row = new ArrayList<>();
                for (int i = 1; i <= n; i++) {
                    row.add(rs.getString(i));
                }
                out.add(String.join(",", row));
            }
        }
        return String.join(" ", out);
    }

    /** Server cursors: the API cursor procedures as the driver calls them. */
    static void cursors(Connection c, String url) throws Exception {
        try (Statement s = c.createStatement()) {
            s.execute("CREATE TABLE cursor_rows (id int PRIMARY KEY, name nvarchar(20) NOT NULL)");
            StringBuilder insert = new StringBuilder("INSERT cursor_rows VALUES ");
            for (int i = 1; i <= 25; i++) {
                insert.append(i > 1 ? ", " : "").append("(").append(i).append(", N'n").append(i).append("')");
            }
            s.execute(insert.toString());
            s.execute("CREATE TABLE cursor_edit (id int PRIMARY KEY, name nvarchar(20) NOT NULL, qty int NULL)");
        }
        String resetEdit = "DELETE cursor_edit; INSERT cursor_edit VALUES (1, N'a', 1), (2, N'b', 2), (3, N'c', 3), "
                + "(4, N'd', 4), (5, N'e', 5)";
        try (Connection cc = DriverManager.getConnection(url + ";selectMethod=cursor;responseBuffering=adaptive")) {
            cc.setCatalog("jdbc_scenario");
            check("selectMethod=cursor: rows come by sp_cursorfetch in blocks of the fetch size", () -> {
                List<Integer> got = new ArrayList<>();
                List<String> fetches = fetchesDuring(() -> {
                    try (Statement st = cc.createStatement()) {
                        st.setFetchSize(4);
                        try (ResultSet rs = st.executeQuery("SELECT id, name FROM cursor_rows ORDER BY id")) {
                            expect(true, serverCursorId(rs) > 0, "a server cursor (sp_cursoropen)");
                            expect(2, rs.getMetaData().getColumnCount(), "columns (ROWSTAT hidden)");
                            while (rs.next()) {
                                got.add(rs.getInt(1));
                                expect("n" + rs.getInt(1), rs.getString("name"), "name");
                            }
                        }
                    }
                });
                expect(range(1, 25), got, "rows in order");
                expect(true, fetches.size() >= 7, "sp_cursorfetch calls of 4 rows: " + fetches);
                expect(true, fetches.stream().allMatch(f -> f.endsWith("numRows:4")), "fetch sizes " + fetches);
            });
            check("selectMethod=cursor: prepared statement (sp_cursorprepexec, then sp_cursorexecute)", () -> {
                try (PreparedStatement ps = cc.prepareStatement("SELECT id FROM cursor_rows WHERE id > ? ORDER BY id")) {
                    ps.setFetchSize(3);
                    ps.setInt(1, 20);
                    try (ResultSet rs = ps.executeQuery()) {
                        expect(true, serverCursorId(rs) > 0, "a server cursor");
                        expect(range(21, 25), ids(rs), "first execution");
                    }
                    ps.setInt(1, 22);
                    try (ResultSet rs = ps.executeQuery()) {
                        expect(range(23, 25), ids(rs), "second execution");
                    }
                }
            });
            check("selectMethod=cursor: a batch of two SELECTs runs directly (16954)", () -> {
                try (Statement st = cc.createStatement()) {
                    expect(true, st.execute("SELECT id FROM cursor_rows WHERE id = 1; SELECT id FROM cursor_rows WHERE id = 2"),
                            "a result set");
                    try (ResultSet rs = st.getResultSet()) {
                        expect(0, serverCursorId(rs), "no server cursor");
                        expect(List.of(1), ids(rs), "first result set");
                    }
                    expect(true, st.getMoreResults(), "a second result set");
                    try (ResultSet rs = st.getResultSet()) {
                        expect(List.of(2), ids(rs), "second result set");
                    }
                    boolean told = false;
                    for (SQLWarning w = st.getWarnings(); w != null; w = w.getNextWarning()) {
                        told |= w.getErrorCode() == 16954;
                    }
                    expect(true, told, "warning 16954 (Executing SQL directly; no cursor.)");
                }
            });
            check("selectMethod=cursor: a statement that is not a SELECT still counts", () -> {
                try (Statement st = cc.createStatement()) {
                    expect(1, st.executeUpdate("UPDATE cursor_rows SET name = N'n1' WHERE id = 1"), "update count");
                }
            });
        }
        check("TYPE_SCROLL_INSENSITIVE: first, last, absolute, relative, previous, getRow", () -> {
            try (Statement st = c.createStatement(ResultSet.TYPE_SCROLL_INSENSITIVE, ResultSet.CONCUR_READ_ONLY)) {
                st.setFetchSize(5);
                try (ResultSet rs = st.executeQuery("SELECT id, name FROM cursor_rows ORDER BY id")) {
                    expect(true, serverCursorId(rs) > 0, "a server cursor");
                    expect(ResultSet.TYPE_SCROLL_INSENSITIVE, rs.getType(), "type");
                    expect(true, rs.last(), "last");
                    expect(25, rs.getInt(1), "last row");
                    expect(25, rs.getRow(), "its number");
                    expect(true, rs.first(), "first");
                    expect(1, rs.getInt(1), "first row");
                    expect(1, rs.getRow(), "its number");
                    expect(true, rs.absolute(12), "absolute(12)");
                    expect(12, rs.getInt(1), "row 12");
                    expect(12, rs.getRow(), "its number");
                    expect(true, rs.relative(-5), "relative(-5)");
                    expect(7, rs.getInt(1), "row 7");
                    expect(true, rs.previous(), "previous");
                    expect(6, rs.getInt(1), "row 6");
                    expect(true, rs.previous(), "previous across a fetch block");
                    expect(5, rs.getInt(1), "row 5");
                    expect(true, rs.relative(10), "relative(10)");
                    expect(15, rs.getInt(1), "row 15");
                    expect(true, rs.absolute(-2), "absolute(-2)");
                    expect(24, rs.getInt(1), "row 24");
                    expect(24, rs.getRow(), "its number");
                    rs.afterLast();
                    expect(true, rs.previous(), "previous after the last row");
                    expect(25, rs.getInt(1), "row 25");
                    rs.beforeFirst();
                    expect(true, rs.next(), "next before the first row");
                    expect(1, rs.getInt(1), "row 1");
                    expect(false, rs.previous(), "previous from the first row");
                    expect(true, rs.isBeforeFirst(), "before the first row");
                    expect(false, rs.absolute(30), "absolute past the end");
                    expect(true, rs.isAfterLast(), "after the last row");
                    // Insensitive: a change made after the cursor opened is not seen.
                    try (Statement other = c.createStatement()) {
                        other.executeUpdate("UPDATE cursor_rows SET name = N'changed' WHERE id = 3");
                    }
                    expect(true, rs.absolute(3), "absolute(3)");
                    expect("n3", rs.getString(2), "the value at open");
                } finally {
                    try (Statement other = c.createStatement()) {
                        other.executeUpdate("UPDATE cursor_rows SET name = N'n3' WHERE id = 3");
                    }
                }
            }
        });
        check("TYPE_SCROLL_SENSITIVE: each fetch reads its rows again", () -> {
            try (Statement st = c.createStatement(ResultSet.TYPE_SCROLL_SENSITIVE, ResultSet.CONCUR_READ_ONLY)) {
                st.setFetchSize(2);
                try (ResultSet rs = st.executeQuery("SELECT id, name FROM cursor_rows ORDER BY id")) {
                    expect(true, rs.next(), "row 1");
                    try (Statement other = c.createStatement()) {
                        other.executeUpdate("UPDATE cursor_rows SET name = N'new' WHERE id IN (2, 4)");
                        other.executeUpdate("DELETE cursor_rows WHERE id = 5");
                    }
                    expect(true, rs.next(), "row 2");
                    expect("n2", rs.getString(2), "row 2, fetched before the change");
                    expect(true, rs.next(), "row 3");
                    expect(true, rs.next(), "row 4");
                    expect("new", rs.getString(2), "row 4, fetched after the change");
                    expect(true, rs.next(), "row 5");
                    try {
                        rs.getString(2);
                        throw new AssertionError("read a value of row 5, deleted since the cursor opened");
                    } catch (SQLException e) {
                        // ROWSTAT 2: the driver knows the row is missing.
                    }
                    expect(true, rs.next(), "row 6");
                    expect("n6", rs.getString(2), "row 6");
                } finally {
                    try (Statement other = c.createStatement()) {
                        other.executeUpdate("UPDATE cursor_rows SET name = N'n' + CAST(id AS nvarchar(10)) WHERE id IN (2, 4)");
                        other.executeUpdate("INSERT cursor_rows VALUES (5, N'n5')");
                    }
                }
            }
        });
        check("updatable result set: updateRow, deleteRow, insertRow (sp_cursor)", () -> {
            try (Statement s = c.createStatement()) {
                s.execute(resetEdit);
            }
            try (Statement st = c.createStatement(ResultSet.TYPE_SCROLL_SENSITIVE, ResultSet.CONCUR_UPDATABLE)) {
                st.setFetchSize(2);
                try (ResultSet rs = st.executeQuery("SELECT id, name, qty FROM cursor_edit ORDER BY id")) {
                    expect(ResultSet.CONCUR_UPDATABLE, rs.getConcurrency(), "concurrency");
                    expect(true, rs.absolute(2), "absolute(2)");
                    rs.updateString("name", "two");
                    rs.updateInt("qty", 22);
                    rs.updateRow();
                    expect(true, rs.absolute(3), "absolute(3)");
                    rs.deleteRow();
                    rs.moveToInsertRow();
                    rs.updateInt("id", 100);
                    rs.updateString("name", "hundred");
                    rs.updateInt("qty", 7);
                    rs.insertRow();
                    rs.moveToCurrentRow();
                    rs.beforeFirst();
                    expect(true, rs.absolute(3), "absolute(3) fetched again");
                    expect(true, rs.rowDeleted(), "the deleted row");
                    expect(true, rs.absolute(2), "absolute(2)");
                    expect("two", rs.getString("name"), "the updated row");
                    expect(true, rs.last(), "last");
                    expect(100, rs.getInt("id"), "the inserted row, at the end");
                    expect(6, rs.getRow(), "its number");
                }
            }
            expect("1,a,1 2,two,22 4,d,4 5,e,5 100,hundred,7", rows(c, "SELECT id, name, qty FROM cursor_edit ORDER BY id"),
                    "the table");
        });
        check("updatable result set: optimistic concurrency (16947)", () -> {
            try (Statement st = c.createStatement(ResultSet.TYPE_SCROLL_SENSITIVE, ResultSet.CONCUR_UPDATABLE);
                    ResultSet rs = st.executeQuery("SELECT id, name, qty FROM cursor_edit ORDER BY id")) {
                expect(true, rs.first(), "first");
                try (Statement other = c.createStatement()) {
                    other.executeUpdate("UPDATE cursor_edit SET qty = 10 WHERE id = 1");
                }
                rs.updateInt("qty", 11);
                try {
                    rs.updateRow();
                    throw new AssertionError("the update of a row changed since it was fetched went through");
                } catch (SQLException e) {
                    expect(16947, e.getErrorCode(), "error number");
                }
                rs.refreshRow();
                expect(10, rs.getInt("qty"), "the row as it is now");
                rs.updateInt("qty", 11);
                rs.updateRow();
            }
            expect("11", rows(c, "SELECT qty FROM cursor_edit WHERE id = 1"), "the update after the refresh");
        });
        check("forward-only updatable result set: update each row as it is read", () -> {
            try (Statement st = c.createStatement(ResultSet.TYPE_FORWARD_ONLY, ResultSet.CONCUR_UPDATABLE)) {
                st.setFetchSize(2);
                try (ResultSet rs = st.executeQuery("SELECT id, qty FROM cursor_edit ORDER BY id")) {
                    expect(true, serverCursorId(rs) > 0, "a server cursor");
                    while (rs.next()) {
                        rs.updateInt("qty", rs.getInt("qty") * 10);
                        rs.updateRow();
                    }
                }
            }
            expect("1,110 2,220 4,40 5,50 100,70", rows(c, "SELECT id, qty FROM cursor_edit ORDER BY id"), "the table");
        });
        check("read-only cursor refuses sp_cursor (16929)", () -> {
            try (Statement st = c.createStatement(ResultSet.TYPE_SCROLL_SENSITIVE, ResultSet.CONCUR_UPDATABLE);
                    ResultSet rs = st.executeQuery("SELECT COUNT(*) AS n FROM cursor_edit")) {
                expect(true, rs.next(), "the count's row");
                try {
                    rs.deleteRow();
                    throw new AssertionError("deleted through a STATIC (read-only) cursor");
                } catch (SQLException e) {
                    expect(16929, e.getErrorCode(), "error number");
                }
            }
        });
    }
}
