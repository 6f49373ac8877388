import { describe, expect, it } from 'vitest';
import { useTestServer } from '../../helpers/test-server.ts';

const env = useTestServer();

describe('GET /server_settings', () => {
  it('answers without credentials with the feature level and organization', async () => {
    const { data, response } = await env.anonymous().GET('/server_settings');
    expect(response.status).toBe(200);
    expect(data).toMatchObject({
      result: 'success',
      msg: '',
      zulip_feature_level: 420,
      realm_name: 'Parley',
      realm_url: 'http://parley.test',
      email_auth_enabled: true,
      require_email_format_usernames: true,
      authentication_methods: { password: true },
    });
    expect(typeof data?.zulip_version).toBe('string');
  });
});
