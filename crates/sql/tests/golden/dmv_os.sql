-- The SQLOS views: sys.dm_os_sys_info and sys.dm_os_schedulers, their columns as SQL
-- Server documents them (name, type, length and nullability, in order), and what holds
-- on every machine whatever its CPUs.
select c.name, type_name(c.system_type_id) as type, c.max_length, c.is_nullable
from sys.system_columns c join sys.system_objects o on o.object_id = c.object_id where o.name = 'dm_os_sys_info' order by c.column_id
go
select c.name, type_name(c.system_type_id) as type, c.max_length, c.is_nullable
from sys.system_columns c join sys.system_objects o on o.object_id = c.object_id where o.name = 'dm_os_schedulers' order by c.column_id
go
-- One online scheduler per CPU the server may use, numbered from 0; the server started
-- before now.
select
  case when (select count(*) from sys.dm_os_schedulers where status = 'VISIBLE ONLINE')
    = (select cpu_count from sys.dm_os_sys_info) then 1 else 0 end as one_scheduler_per_cpu,
  case when (select scheduler_count from sys.dm_os_sys_info) = (select cpu_count from sys.dm_os_sys_info)
    then 1 else 0 end as scheduler_count_is_cpu_count,
  case when (select min(scheduler_id) from sys.dm_os_schedulers where is_online = 1) = 0
    and (select max(scheduler_id) from sys.dm_os_schedulers where is_online = 1)
      = (select count(*) - 1 from sys.dm_os_schedulers where is_online = 1) then 1 else 0 end as numbered_from_0,
  case when (select sqlserver_start_time from sys.dm_os_sys_info) <= getdate() then 1 else 0 end as started_before_now,
  case when (select sqlserver_start_time_ms_ticks from sys.dm_os_sys_info)
    <= (select ms_ticks from sys.dm_os_sys_info) then 1 else 0 end as started_ticks_before_now
go
-- What does not depend on the machine.
select affinity_type, affinity_type_desc, max_workers_count, deadlock_monitor_serial_number, time_source_desc,
  softnuma_configuration_desc, sql_memory_model, sql_memory_model_desc, container_type_desc
from sys.dm_os_sys_info
go
