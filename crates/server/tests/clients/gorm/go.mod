module tessera/gorm-scenario

go 1.26.8

require (
	github.com/microsoft/go-mssqldb v1.8.2
	gorm.io/driver/sqlserver v1.6.3
	gorm.io/gorm v1.31.2
)

require (
	github.com/golang-sql/civil v0.0.0-20220223132316-b832511892a9 // indirect
	github.com/golang-sql/sqlexp v0.1.0 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/jinzhu/inflection v1.0.0 // indirect
	github.com/jinzhu/now v1.1.5 // indirect
	golang.org/x/crypto v0.24.0 // indirect
	golang.org/x/text v0.20.0 // indirect
)
