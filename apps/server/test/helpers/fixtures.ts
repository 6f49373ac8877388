// The people of every test organization (named after Zulip's own test users) and the shared secret
// of the test run, so that API keys created once in the template database work in every copy.
export const TEST_SECRET = 'a1'.repeat(32);
export const TEST_PASSWORD = 'correct horse battery staple';

export const PEOPLE = {
  desdemona: { email: 'desdemona@parley.test', fullName: 'Desdemona', role: 100 },
  iago: { email: 'iago@parley.test', fullName: 'Iago', role: 200 },
  shiva: { email: 'shiva@parley.test', fullName: 'Shiva', role: 300 },
  hamlet: { email: 'hamlet@parley.test', fullName: 'King Hamlet', role: 400 },
  othello: { email: 'othello@parley.test', fullName: 'Othello, the Moor of Venice', role: 400 },
  cordelia: { email: 'cordelia@parley.test', fullName: 'Cordelia, Lear\'s daughter', role: 400 },
  polonius: { email: 'polonius@parley.test', fullName: 'Polonius', role: 600 },
} as const;
export type Person = keyof typeof PEOPLE;

export interface TemplateInfo {
  adminUrl: string;
  templateDatabase: string;
  users: Record<Person, { id: number; email: string; apiKey: string }>;
  realmUrl: string;
}
