// mssql-jdbc through a gateway: connects (args: port, password, database, stop file or
// "-"), prints db_name() and whether the server sees the connection encrypted, waits for the stop file (the test kills the gateway
// meanwhile), then prints the value in dbo.a on the same connection.
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;

public class Redirect {
    public static void main(String[] args) throws Exception {
        String url = "jdbc:sqlserver://127.0.0.1:" + args[0] + ";databaseName=" + args[2]
            + ";user=sa;password=" + args[1] + ";encrypt=false;trustServerCertificate=true";
        try (Connection c = DriverManager.getConnection(url)) {
            System.out.println(first(c, "select db_name()"));
            System.out.println(first(c, "select encrypt_option from sys.dm_exec_connections where session_id = @@spid"));
            System.out.flush();
            while (!args[3].equals("-") && !Files.exists(Path.of(args[3]))) {
                Thread.sleep(20);
            }
            System.out.println(first(c, "select v from dbo.a"));
        }
    }

    static String first(Connection c, String sql) throws Exception {
        try (ResultSet r = c.createStatement().executeQuery(sql)) {
            r.next();
            return r.getString(1);
        }
    }
}
