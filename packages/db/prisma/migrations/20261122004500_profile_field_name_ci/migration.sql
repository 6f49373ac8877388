-- Hand-written: custom profile field labels are unique per organization regardless of case.
CREATE UNIQUE INDEX "custom_profile_field_realm_id_lower_name_key" ON "custom_profile_field" ("realm_id", lower("name"));
